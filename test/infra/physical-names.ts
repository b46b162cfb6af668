/**
 * The physical names a template gives its resources, evaluated as CloudFormation would for one
 * deployment (stack name, stack id, account, region), so two deployments can be compared.
 */

export interface Deployment {
  readonly stackName: string;
  /** The uuid in the stack id: new each time a stack is created. */
  readonly stackUuid: string;
  readonly region: string;
  readonly account: string;
}

export interface PhysicalName {
  readonly type: string;
  readonly logicalId: string;
  /** Where in the properties: `LogGroupName`, `Tags[].Name`, ... */
  readonly path: string;
  readonly name: string;
  /** DeletionPolicy Retain, RetainExceptOnCreate or Snapshot: the resource outlives a `cdk destroy`. */
  readonly retained: boolean;
}

interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DeletionPolicy?: string;
}

export interface TemplateJson {
  readonly Resources: Record<string, TemplateResource>;
}

/** Name-like properties that are not a resource's name in an account-wide namespace, and why. */
export const NOT_PHYSICAL_NAMES: Readonly<Record<string, string>> = {
  MetricName: 'the metric an alarm watches',
  DisplayName: "an SNS topic's display name (shown in e-mails), not unique",
  'Dimensions[].Name': "a metric dimension's name (FunctionName, QueueName, ...)",
  'AWS::IAM::Policy PolicyName': "an inline policy's name, unique per role only",
};

/** Every physical name in `template` as `deployment` would give it. */
export function physicalNames(template: TemplateJson, deployment: Deployment): PhysicalName[] {
  const found: PhysicalName[] = [];
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    const visit = (value: unknown, path: string): void => {
      if (Array.isArray(value)) {
        for (const item of value) visit(item, `${path}[]`);
        return;
      }
      if (typeof value !== 'object' || value === null || isIntrinsic(value)) return;
      for (const [key, child] of Object.entries(value)) {
        const childPath = path === '' ? key : `${path}.${key}`;
        if (/Name$/.test(key) && isPhysicalName(resource.Type, childPath, child, template)) {
          found.push({
            type: resource.Type,
            logicalId,
            path: childPath,
            name: evaluate(child, deployment, template),
            retained: ['Retain', 'RetainExceptOnCreate', 'Snapshot'].includes(resource.DeletionPolicy ?? ''),
          });
        } else {
          visit(child, childPath);
        }
      }
    };
    visit(resource.Properties ?? {}, '');
  }
  return found;
}

function isPhysicalName(type: string, path: string, value: unknown, template: TemplateJson): boolean {
  const key = path.split('.').at(-1)!;
  if (key in NOT_PHYSICAL_NAMES || path in NOT_PHYSICAL_NAMES || `${type} ${path}` in NOT_PHYSICAL_NAMES)
    return false;
  // A reference to another resource of the template names that resource, not this one.
  return referencedResource(value, template) === undefined;
}

function referencedResource(value: unknown, template: TemplateJson): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const node = value as Record<string, unknown>;
  const target = typeof node.Ref === 'string' ? node.Ref : (node['Fn::GetAtt'] as unknown[] | undefined)?.[0];
  return typeof target === 'string' && target in template.Resources ? target : undefined;
}

function isIntrinsic(value: object): boolean {
  return Object.keys(value).some((key) => key === 'Ref' || key.startsWith('Fn::'));
}

/** A value as CloudFormation resolves it at `deployment`; a generated name stays a placeholder. */
export function evaluate(value: unknown, deployment: Deployment, template: TemplateJson): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  const fail = (): never => {
    throw new Error(`cannot evaluate ${JSON.stringify(value)}: teach test/infra/physical-names.ts`);
  };
  if (typeof value !== 'object' || value === null) return fail();
  const node = value as Record<string, unknown>;
  const resource = referencedResource(value, template);
  if (resource !== undefined) {
    // CloudFormation generates it: unique to this stack creation.
    return `<generated ${deployment.stackUuid} ${resource}>`;
  }
  if (typeof node.Ref === 'string') {
    const pseudo: Record<string, string> = {
      'AWS::StackName': deployment.stackName,
      'AWS::StackId': `arn:aws:cloudformation:${deployment.region}:${deployment.account}:stack/${deployment.stackName}/${deployment.stackUuid}`,
      'AWS::Region': deployment.region,
      'AWS::AccountId': deployment.account,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
    };
    return pseudo[node.Ref] ?? fail();
  }
  const join = node['Fn::Join'] as [string, unknown[]] | undefined;
  if (join !== undefined) return join[1].map((part) => evaluate(part, deployment, template)).join(join[0]);
  const select = node['Fn::Select'] as [number, unknown] | undefined;
  if (select !== undefined) return evaluateList(select[1], deployment, template)[select[0]] ?? fail();
  return fail();
}

function evaluateList(value: unknown, deployment: Deployment, template: TemplateJson): string[] {
  const split = (value as Record<string, unknown>)['Fn::Split'] as [string, unknown] | undefined;
  if (split === undefined) throw new Error(`cannot evaluate the list ${JSON.stringify(value)}`);
  return evaluate(split[1], deployment, template).split(split[0]);
}
