/**
 * Lambda plumbing: one Task invocation as a chain of named stages (handler.ts: find the run, gate
 * it, run the step, record it), the runtime a step gets (S3, the training service, logger,
 * tracer, event bus), the environment, metrics, S3 request metering, and the retry budget shared
 * by the client and the state machine.
 *
 * It owns how a step is run, not what a step decides: rules about credits, status and events are
 * asked of lock/, status/ and events/.
 */
export * from './environment.js';
export * from './handler.js';
export * from './metric-names.js';
export * from './metrics.js';
export * from './retry-budget.js';
export * from './runtime.js';
export * from './s3-requests.js';
export * from './time-box.js';
export * from './tracing.js';
export * from './training-service.js';
