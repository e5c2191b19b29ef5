/** The Sluice MCP client: `import { Client, CancelledError } from 'sluice/client'`. */
export { Client, RpcError } from './client.js';
export type { ClientOptions } from './client.js';
export type {
  RequestOptions, ResultFields, ObjectSchema, ToolInfo, ListToolsResult, CallToolResult, ResourceInfo, ListResourcesResult,
  ResourceTemplateInfo, ListResourceTemplatesResult, ReadResourceResult, PromptInfo, ListPromptsResult, GetPromptResult, CompleteResult,
} from './types.js';
export type { TaskCallOptions, TaskHandle, TaskInfo, TaskStatus, InputRequest, InputResponses, ListTasksResult } from './tasks.js';
export { StdioClientTransport } from './stdio.js';
export type { StdioTransportOptions } from './stdio.js';
export { HttpClientTransport, SessionExpiredError, UnauthorizedError, InsufficientScopeError } from './http.js';
export type { HttpTransportOptions, BearerToken, UnauthorizedDetails, InsufficientScopeDetails } from './http.js';
export { parseWwwAuthenticate } from './www-authenticate.js';
export type { AuthChallenge } from './www-authenticate.js';
export type { ClientTransport, SendOptions, JsonRpcMessage } from './transport.js';
export { CancelledError, SluiceError } from '../errors.js';
export type { ContentBlock, ResourceContents, PromptArgument, PromptMessage } from './content.js';
