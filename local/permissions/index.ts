/**
 * The permissions check behind `hopper permissions`: that the role a synthesized template gives
 * each Hopper function allows every AWS call the function makes, and grants nothing else but
 * CDK's own grants (EXEMPT, with why).
 *
 *   recorded-calls.json  every kind of call each function makes, recorded from local runs of every
 *                        path (test/permissions/recording.test.ts keeps it true)
 *   template.ts          the template: functions by Description, their roles, resource policies
 *   actions.ts           each recorded call as IAM requests (action, resource ARN, condition keys)
 *   check.ts             an IAM policy simulator's decision for each, and the grants no call uses
 *   command.ts           `hopper permissions`: the check run on a template, as a table or JSON
 */
export { CALL_ACTIONS, iamRequests, type AwsCall } from './actions.js';
export {
  checkPermissions,
  EXEMPT,
  RECORDED_CALLS,
  type CallDecision,
  type PermissionsReport,
  type Simulate,
} from './check.js';
export { templateFunctions, type Template } from './template.js';
export { runPermissionsCommand } from './command.js';
