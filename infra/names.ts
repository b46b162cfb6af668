/**
 * The physical names the stack gives, in one place; everything else is named by CloudFormation
 * (a generated name is unique by construction). A name given here must not collide when Hopper is
 * deployed again in the same account: under another stack name, in another region, or under the
 * same name after a `cdk destroy` that left something behind (a retained log group or secret).
 * test/infra/names.test.ts checks every name-like property of the template.
 */
import { Fn, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

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
 * retained, and keeps its name). Secrets are regional and stack names unique per region.
 */
export function apiKeySecretName(scope: IConstruct): string {
  return `${Stack.of(scope).stackName}/training-service-api-key-${stackCreationId(scope)}`;
}

/**
 * Step Functions' log group. The `/aws/vendedlogs/states/` prefix lets Step Functions deliver logs
 * without adding the group to the account's one CloudWatch Logs resource policy (whose size limit
 * a busy account reaches, failing the deploy with InvalidLoggingConfiguration). The group is
 * retained when the stack is deleted, so its name carries the stack's creation id.
 */
export const VENDED_LOGS_PREFIX = '/aws/vendedlogs/states/';

export function executionLogGroupName(scope: IConstruct): string {
  return `${VENDED_LOGS_PREFIX}${Stack.of(scope).stackName}-${stackCreationId(scope)}`;
}

/**
 * The dashboard. Dashboards are global to the account, not regional, so the name carries the
 * region as well as the stack name (unique per region); it is deleted with the stack.
 */
export function dashboardName(scope: IConstruct): string {
  const stack = Stack.of(scope);
  return `${stack.stackName}-${stack.region}`;
}
