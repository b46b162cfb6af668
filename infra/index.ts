/**
 * @packageDocumentation
 * hopper-cdk: Hopper as a construct for your own CDK app (README.md, "Use Hopper in your own CDK
 * app"; API.md). `new Hopper(stack, 'Training', { serviceUrl })` builds the drop bucket (or takes
 * yours), the pipeline with its 12 pre-bundled functions, run notifications and monitoring.
 * Everything else in infra/ is the repository's own app (app.ts, stack.ts, config.ts).
 */
export { Hopper, type HopperCreditBudget, type HopperLogLevel, type HopperProps } from './constructs/hopper.js';
export { LOG_LEVELS } from './constructs/hopper-props.js';
export type { TaskName } from '../lambdas/run/state/index.js';
