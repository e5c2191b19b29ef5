/** HTTP worker thread entry: one uWS (or node:http) server on the shared port. */
import { runHttpWorker } from '../http-worker.js';

void runHttpWorker();
