/**
 * The physical names the stack gives, in one place; everything else is named by CloudFormation
 * (a generated name is unique by construction). A name given here must not collide when Hopper is
 * deployed again in the same account: under another stack name, in another region, or under the
 * same name after a `cdk destroy` that left something behind (a retained log group or secret),
 * nor with another Hopper in the same stack. test/infra/names.test.ts checks every name-like
 * property of the template.
 */
import { Fn, Lazy, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Marks a construct as a Hopper, without importing the construct here (it imports this file). */
const HOPPER_MARK = Symbol.for('hopper-cdk.Hopper');

export function markAsHopper(hopper: IConstruct): void {
  Object.defineProperty(hopper, HOPPER_MARK, { value: true });
}

function isHopper(construct: IConstruct): boolean {
  return (construct as unknown as Record<symbol, unknown>)[HOPPER_MARK] === true;
}

/**
 * The Hopper's path below its stack, in the characters every name below allows (`Training`,
 * `Teams-Search`): what tells two Hoppers of one stack apart.
 */
export function hopperPathInStack(hopper: IConstruct): string {
  const stack = Stack.of(hopper);
  const below = hopper.node.scopes.slice(hopper.node.scopes.indexOf(stack) + 1);
  return below.map((scope) => scope.node.id.replace(/[^A-Za-z0-9_-]/g, '')).join('-');
}

/**
 * The part of a name that tells the enclosing Hopper from the others of its stack: `-<path>`
 * when the stack holds several, and nothing when it holds one, so a stack with one Hopper keeps
 * the names 0.2.0 gave it (a new secret name would replace the secret; docs/upgrading.md).
 * Resolved at synth, when every Hopper of the stack has been added.
 */
function hopperSuffix(scope: IConstruct): string {
  const hopper = scope.node.scopes.findLast(isHopper);
  if (hopper === undefined) return '';
  const stack = Stack.of(hopper);
  return Lazy.string({
    produce: () => {
      const paths = stack.node
        .findAll()
        .filter((construct) => isHopper(construct) && Stack.of(construct) === stack)
        .map(hopperPathInStack);
      if (paths.length < 2) return '';
      const own = hopperPathInStack(hopper);
      if (paths.filter((path) => path === own).length > 1) {
        throw new Error(
          `Hopper ${hopper.node.path}: another Hopper of stack ${stack.stackName} has the path "${own}" once its ids are cut to letters, digits, - and _, and its secret, log group and dashboard would take the same names: give one of them another id`,
        );
      }
      return `-${own}`;
    },
  });
}

/**
 * Eight hex digits of the stack's id (`arn:...:stack/<name>/<uuid>`): new each time the stack is
 * created, so a name that carries it differs from the one a destroyed stack left behind.
 */
export function stackCreationId(scope: IConstruct): string {
  const stack = Stack.of(scope);
  return Fn.select(0, Fn.split('-', Fn.select(2, Fn.split('/', stack.stackId))));
}

/**
 * The new API key secret: readable, and unique per stack creation (a destroyed stack's secret is
 * retained, and keeps its name) and per Hopper of the stack. Secrets are regional and stack names
 * unique per region.
 */
export function apiKeySecretName(scope: IConstruct): string {
  return `${Stack.of(scope).stackName}${hopperSuffix(scope)}/training-service-api-key-${stackCreationId(scope)}`;
}

/**
 * Step Functions' log group. The `/aws/vendedlogs/states/` prefix lets Step Functions deliver logs
 * without adding the group to the account's one CloudWatch Logs resource policy (whose size limit
 * a busy account reaches, failing the deploy with InvalidLoggingConfiguration). The group is
 * retained when the stack is deleted, so its name carries the stack's creation id.
 */
export const VENDED_LOGS_PREFIX = '/aws/vendedlogs/states/';

export function executionLogGroupName(scope: IConstruct): string {
  return `${VENDED_LOGS_PREFIX}${Stack.of(scope).stackName}${hopperSuffix(scope)}-${stackCreationId(scope)}`;
}

/**
 * The dashboard. Dashboards are global to the account, not regional, so the name carries the
 * region as well as the stack name (unique per region); it is deleted with the stack.
 */
export function dashboardName(scope: IConstruct): string {
  const stack = Stack.of(scope);
  return `${stack.stackName}${hopperSuffix(scope)}-${stack.region}`;
}
