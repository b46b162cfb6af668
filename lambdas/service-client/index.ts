/**
 * The training service client. Usage and rules: docs/service-client.md. Every assumption about
 * the service beyond its published interface lives in contract.ts.
 */
export * from './client.js';
export * from './contract.js';
// Every error class, and ServiceErrorCode.
export * from './errors.js';
export * from './pagination.js';
export * from './retry.js';
export * from './transfer.js';
