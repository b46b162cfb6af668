/**
 * A synthesized CloudFormation template as the permissions check reads it: each Hopper function
 * (found by its Description, `Hopper <name>: ...`, never by logical id), the statements of its role,
 * its environment, and the resources in the way, every reference resolved in one fixed account,
 * region and partition.
 */
export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';
export const PARTITION = 'aws';

interface Resource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
}

export interface Template {
  readonly Resources: Record<string, Resource>;
  readonly Parameters?: Record<string, { Default?: string }>;
}

export interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource?: unknown;
}

export interface PolicyDocument {
  readonly Version: string;
  readonly Statement: Statement[];
}

export interface TemplateFunction {
  readonly name: string;
  /** Every statement of the role's policies in one document (a statement's number is its place). */
  readonly policy: PolicyDocument;
  readonly environment: Readonly<Record<string, string>>;
}

export const arn = (service: string, path: string): string =>
  `arn:${PARTITION}:${service}:${REGION}:${ACCOUNT}:${path}`;

/** What `Ref` (or `Fn::GetAtt` of `attribute`) of resource `id` gives in CloudFormation. */
function refOf(id: string, resource: Resource | undefined, attribute?: string): string {
  const named = (key: string): string => {
    const value = resource?.Properties?.[key];
    return typeof value === 'string' ? value : id.toLowerCase();
  };
  const byType: Record<string, () => string> = {
    'AWS::S3::Bucket': () => (attribute === 'Arn' ? `arn:${PARTITION}:s3:::` : '') + named('BucketName'),
    'AWS::SecretsManager::Secret': () => arn('secretsmanager', `secret:${named('Name')}-AbCdEf`),
    'AWS::StepFunctions::StateMachine': () =>
      attribute === 'Name'
        ? named('StateMachineName')
        : arn('states', `stateMachine:${named('StateMachineName')}`),
    'AWS::KMS::Key': () => (attribute === 'Arn' ? arn('kms', `key/${id}`) : id),
  };
  const service = resource?.Type.split('::')[1]?.toLowerCase() ?? 'unknown';
  return byType[resource?.Type ?? '']?.() ?? (attribute === undefined ? id : arn(service, id));
}

const PSEUDO: Readonly<Record<string, string>> = {
  'AWS::AccountId': ACCOUNT,
  'AWS::Region': REGION,
  'AWS::Partition': PARTITION,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'Hopper',
  'AWS::StackId': arn('cloudformation', 'stack/Hopper/0a1b2c3d-0000-4000-8000-000000000000'),
};

/** `value` with every Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split resolved. */
export function resolve(template: Template, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => resolve(template, item));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const [fn, arg] = entries.length === 1 ? (entries[0] ?? []) : [];
  const args = (resolve(template, arg) ?? []) as unknown[];
  const ref = (name: string): string =>
    PSEUDO[name] ?? template.Parameters?.[name]?.Default ?? refOf(name, template.Resources[name]);
  const getAtt = (id = '', attribute = ''): string => refOf(id, template.Resources[id], attribute);
  if (fn === 'Ref') return ref(String(arg));
  if (fn === 'Fn::GetAtt')
    return Array.isArray(arg) ? getAtt(...arg.map(String)) : getAtt(...String(arg).split('.'));
  if (fn === 'Fn::Join') return (args[1] as unknown[]).map(String).join(String(args[0]));
  if (fn === 'Fn::Select') return (args[1] as unknown[])[Number(args[0])];
  if (fn === 'Fn::Split') return String(args[1]).split(String(args[0]));
  if (fn === 'Fn::Sub') {
    return String(arg).replace(/\$\{([^}]+)\}/g, (_, name: string) =>
      name.includes('.') ? getAtt(...name.split('.')) : ref(name),
    );
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, resolve(template, item)]));
}

/** Each Hopper function of the template, with its role's statements and its environment. */
export function templateFunctions(template: Template): TemplateFunction[] {
  const resources = Object.values(template.Resources);
  return Object.values(template.Resources).flatMap((fn) => {
    const name = /^Hopper (\w+):/.exec(String(fn.Properties?.Description))?.[1];
    if (fn.Type !== 'AWS::Lambda::Function' || name === undefined) return [];
    const role = (fn.Properties?.Role as { 'Fn::GetAtt'?: [string] })['Fn::GetAtt']?.[0] ?? '';
    const inline = (template.Resources[role]?.Properties?.Policies ?? []) as { PolicyDocument: unknown }[];
    const attached = resources.filter(
      (policy) =>
        policy.Type === 'AWS::IAM::Policy' &&
        (policy.Properties?.Roles as { Ref?: string }[]).some((r) => r.Ref === role),
    );
    const documents = [...inline, ...attached.map((policy) => policy.Properties ?? {})];
    const statements = documents.flatMap(
      (doc) => (resolve(template, doc.PolicyDocument) as PolicyDocument).Statement,
    );
    const variables = (fn.Properties?.Environment as { Variables?: unknown } | undefined)?.Variables;
    const environment = (resolve(template, variables) ?? {}) as Record<string, string>;
    return [{ name, policy: { Version: '2012-10-17', Statement: statements }, environment }];
  });
}

/** An execution of the template's state machine (its one AWS::StepFunctions::StateMachine). */
export function executionArn(template: Template, name: string): string | undefined {
  const id = Object.keys(template.Resources).find(
    (key) => template.Resources[key]?.Type === 'AWS::StepFunctions::StateMachine',
  );
  if (id === undefined) return undefined;
  const machine = resolve(template, { 'Fn::GetAtt': [id, 'Name'] });
  return arn('states', `execution:${String(machine)}:${name}`);
}

/** The bucket the trigger's rule watches: the one bucket Hopper keeps everything in. */
export function bucketName(template: Template): string {
  for (const rule of Object.values(template.Resources)) {
    if (rule.Type !== 'AWS::Events::Rule') continue;
    const pattern = resolve(template, rule.Properties?.EventPattern) as {
      detail?: { bucket?: { name?: [unknown] } };
    };
    const name = pattern.detail?.bucket?.name?.[0];
    if (typeof name === 'string') return name;
  }
  throw new Error('the template has no EventBridge rule for the S3 Object Created events of a bucket');
}

/**
 * The resolved `property` of the resource of `type` that `owner` (its `Ref`, or the value of its
 * property `ownerProperty`: a bucket policy's Bucket) resolves to `target`.
 */
export function propertyOf(
  template: Template,
  [type, ownerProperty]: readonly [string, string?],
  target: string,
  property: string,
): unknown {
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== type) continue;
    const owner =
      ownerProperty === undefined
        ? [refOf(id, resource), refOf(id, resource, 'Arn')]
        : [resolve(template, resource.Properties?.[ownerProperty])];
    if (owner.includes(target)) return resolve(template, resource.Properties?.[property]);
  }
  return undefined;
}
