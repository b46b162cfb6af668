// The entry of the hopper-cdk package (scripts/build.ts): only what it exports is public. The rest
// of infra/ is the repository's own app (app.ts, stack.ts, config.ts) and the constructs Hopper
// is made of.

/**
 * @packageDocumentation
 * hopper-cdk: Hopper as a construct for your own CDK app. `new Hopper(stack, 'Training',
 * { serviceUrl })` builds the drop bucket (or takes yours), the pipeline with its 12 pre-bundled
 * Lambda functions, run notifications and monitoring.
 */
export {
  Hopper,
  type HopperCreditBudget,
  type HopperLogLevel,
  type HopperProps,
} from './constructs/hopper.js';
export { LOG_LEVELS } from './constructs/hopper-props.js';
