/**
 * Lambda plumbing: one Task invocation as a chain of named stages (handler.ts: find the run, gate
 * it, run the step, record it), the runtime a step gets (S3, the training service, logger,
 * tracer, event bus, Step Functions' executions: executions.ts), the environment, metrics, S3
 * request metering, the retry budget shared by the client and the state machine, the EventBridge
 * bus (eventbridge-bus.ts) and when the steps put the run events (publish-events.ts).
 *
 * It owns how a step is run, not what a step decides: rules about credits, status and events are
 * asked of lambdas/ownership/ and lambdas/records/.
 */
export * from './environment.js';
export * from './executions.js';
export * from './handler.js';
export * from './metric-names.js';
export * from './metrics.js';
export * from './retry-budget.js';
export * from './runtime.js';
export * from './s3-requests.js';
export * from './time-box.js';
export * from './tracing.js';
export * from './training-service.js';
export * from './eventbridge-bus.js';
export * from './publish-events.js';
