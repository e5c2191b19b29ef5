/**
 * Sluice: an MCP server for Node.js built for high-throughput hosting, with a cancellation registry
 * in shared memory. This module is the public API; nothing inside src/ imports it.
 */
export * from './registry/index.js';
export { SluiceError, CancelledError } from './errors.js';
export type { SluiceErrorCode, SluiceErrorWire } from './errors.js';
export {
  requestCancelledChannel, cancellationCleanupChannel, requestStopChannel, requestKilledChannel,
} from './telemetry/index.js';
export type { RequestCancelledEvent, CancellationCleanupEvent } from './telemetry/index.js';
export { createServer } from './process/supervisor.js';
export type { Server, ServerAddress, ServerHooks } from './process/supervisor.js';
export type { ServerOptions, ServerLogLevel, ServerLogSink } from './server/options.js';
export { defineTool, toCallToolResult } from './tools/define.js';
export type { Tool, ToolDefinition, ToolOutput, CallToolResult, ContentBlock, ToolSchema, InferArguments, InferToolOutput } from './tools/define.js';
export type { StandardSchemaV1 } from './tools/standard-schema.js';
export { ToolContext } from './tools/context.js';
export type { JsonSchema } from './tools/schema.js';
export type { Authenticate, AuthRequest, Principal } from './transport/http/endpoint.js';
export type { AuthOptions, AuthInfo, VerifiedToken, TokenVerifierFunction } from './auth/contract.js';
export { ErrorCode, ProtocolError } from './protocol/wire.js';
export { serveStdioServer } from './process/stdio-server.js';
export type { StdioServerOptions } from './process/stdio-server.js';
export { defineResource, defineResourceTemplate } from './catalog/resources.js';
export type { Resource, ResourceTemplate, ResourceDefinition, ResourceTemplateDefinition, ResourceContents, ReadOutput } from './catalog/resources.js';
export { definePrompt } from './catalog/prompts.js';
export type { Prompt, PromptDefinition, PromptArgument, PromptMessage, GetPromptResult } from './catalog/prompts.js';
export type { LogLevel, ListKind, InputRequired } from './tools/context.js';
/**
 * Tasks: where they live. `MemoryTaskStore` is the default (one node's memory); another store
 * implements `TaskStore` and is given as `createServer({ tasks: { store } })`.
 */
export { MemoryTaskStore } from './tasks/stores/memory-store.js';
export type { MemoryTaskStoreOptions, TaskStoreStats } from './tasks/stores/memory-store.js';
export { kDefaultTaskLimits } from './tasks/store.js';
export type { TaskStore, TaskLimits } from './tasks/store.js';
export { isTerminal } from './tasks/task.js';
export type { TaskRecord, NewTask, TaskChange, TaskPage, TaskStatus, TaskDialect, TaskInputRequest, TaskError, TaskProgress } from './tasks/task.js';
export type { TasksOptions } from './server/options.js';
/**
 * Cluster mode's task store: tasks in Redis (or Valkey), shared by every Sluice node on it, so a
 * task created on one node is read, answered, cancelled and watched from any other. Construct it
 * with the node's connection (`{ redis, keyPrefix, nodeId }`), TaskLimits and
 * `{ heartbeatMs, commandTimeoutMs }`; a node whose heartbeat stops has its unfinished tasks
 * failed by the others. Redis unreachable: calls reject with `cluster_unavailable`.
 */
export { RedisTaskStore, kNodeStoppedReason } from './tasks/stores/redis-store.js';
export type { RedisTaskStoreOptions } from './tasks/stores/redis-store.js';
export type { RedisContext } from './cluster/contract.js';
