/**
 * Building the stack for template tests: no esbuild run (bundling skipped), no cdk-nag plugin and
 * no CloudFormation validation (the nag tests run those), so a synth takes well under a second.
 */
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { createHopperApp, type HopperApp } from '../../infra/hopper-app.js';
import type { LocalDefinition } from '../../local/emulator/definition.js';
import { localDefinitionOf } from '../../scripts/local-definition.js';
import { flattenReference } from '../../infra/nag.js';

export const SKIP_BUNDLING = { 'aws:cdk:bundling-stacks': [] } as const;

/** Settings that import an existing bucket and secret and fix the URL and e-mail. */
export const EXISTING_RESOURCES = {
  bucketName: 'team-drops',
  apiKeySecretName: 'hopper/api-key',
  serviceUrl: 'https://train.example.com',
  notificationEmail: 'ops@example.com',
} as const;

export interface Synthesized extends HopperApp {
  readonly template: Template;
}

export function synthesize(context: Readonly<Record<string, unknown>> = {}): Synthesized {
  const hopper = createHopperApp({
    cloudFormationValidation: false,
    context: { ...SKIP_BUNDLING, ...context },
  });
  return { ...hopper, template: Template.fromStack(hopper.stack) };
}

export interface CfnResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}

export interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

export function actionsOf(statement: Statement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

export function resourcesOf(statement: Statement): unknown[] {
  return Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
}

/** The Lambda function whose description starts with `Hopper <name>:` and its logical id. */
export function functionNamed(template: Template, name: string): { id: string; resource: CfnResource } {
  const functions = Object.entries(
    template.findResources('AWS::Lambda::Function') as Record<string, CfnResource>,
  );
  const found = functions.filter(([, resource]) =>
    String(resource.Properties.Description).startsWith(`Hopper ${name}:`),
  );
  if (found.length !== 1) throw new Error(`expected one function for ${name}, found ${found.length}`);
  const [id, resource] = found[0]!;
  return { id, resource };
}

/** Every statement of every policy attached to the function's role. */
export function roleStatements(template: Template, fn: CfnResource): Statement[] {
  const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const policies = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, CfnResource>);
  return policies
    .filter((policy) =>
      (policy.Properties.Roles as unknown[]).some((role) => (role as { Ref?: string }).Ref === roleId),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** The statements of `fn`'s role that grant an action of `service` (`logs`, `kms`, ...). */
export function statementsFor(template: Template, fn: CfnResource, service: string): Statement[] {
  return roleStatements(template, fn).filter((statement) =>
    actionsOf(statement).some((action) => action.startsWith(`${service}:`)),
  );
}

/** The resources of `type` in the template, with their logical ids. */
export function resourcesOfType(template: Template, type: string): [string, CfnResource][] {
  return Object.entries(template.findResources(type) as Record<string, CfnResource>);
}

/** The key pattern of an object ARN in the bucket (`inbox/*`), or null for any other resource. */
export function objectPattern(resource: unknown, bucketArn: unknown): string | null {
  const flat = flattenReference(resource);
  const prefix = `${flattenReference(bucketArn)}/`;
  return flat.startsWith(prefix) ? flat.slice(prefix.length) : null;
}

/** The bucket ARN as the template writes it, for the new bucket or an imported one. */
export function bucketArnIn(hopper: HopperApp): unknown {
  return Stack.of(hopper.stack).resolve(hopper.stack.hopper.bucket.bucketArn);
}

/** The stack built in memory (no cdk-nag), and its state machine's definition: what `npm run build` writes. */
export function synthesizeLocalDefinition(): LocalDefinition {
  const { stack } = createHopperApp({ cloudFormationValidation: false, context: SKIP_BUNDLING });
  return localDefinitionOf(stack.hopper);
}
