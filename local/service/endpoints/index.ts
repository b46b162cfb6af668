/**
 * The endpoints: the API server's routes and one handler per endpoint of the contract (datasets,
 * lists, models), and the file server behind presigned URLs (uploads, downloads), both routed
 * and admitted by serve.ts. A handler validates its request, then acts on the domain, and
 * returns the answer instead of writing it.
 *
 * Handlers must not write to the socket themselves (except the file transfers' bodies) and must
 * not decide faults: the request pipeline of faults/ does both around them.
 */
export { createApiHandler } from './api.js';
export type { ServiceParts } from './parts.js';
export { createFileHandler } from './files.js';
