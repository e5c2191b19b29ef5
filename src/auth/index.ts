/** The resource-server side of MCP authorization (no HTTP here: the transport writes what the gate decides). */
export type { AuthInfo, AuthOptions, TokenVerifierFunction, VerifiedToken } from './contract.js';
export { AuthGate, AuthRefusal, kRootMetadataPath, metadataLocation } from './gate.js';
export type { Granted } from './gate.js';
export { resolveAuth, verifyOption } from './options.js';
export type { ResolvedAuth } from './options.js';
