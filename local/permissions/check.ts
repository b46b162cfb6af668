/**
 * The permissions check: each recorded call of each function, evaluated by an IAM policy
 * simulator (@cloud-copilot/iam-simulate: AGPL-3.0, so Hopper neither ships nor installs it)
 * against the role the template gives that function and the resource policies in the way (the
 * bucket's, a customer key's, the secret's), over TLS; and each action a role grants that no
 * recorded call uses.
 */
import type { runSimulation } from '@cloud-copilot/iam-simulate';
import { iamRequests, type AwsCall, type IamRequest, type Targets } from './actions.js';
import calls from './recorded-calls.json' with { type: 'json' };
import {
  ACCOUNT,
  arn,
  bucketName,
  executionArn,
  propertyOf,
  templateFunctions,
  type Template,
  type TemplateFunction,
} from './template.js';

/**
 * Grants CDK adds for a function itself, used by Lambda or by no code path Hopper records, each
 * with why it stays. (Roles of custom resources and of the state machine are not functions of
 * Hopper's and are not checked.)
 */
export const EXEMPT: Readonly<Record<string, string>> = {
  'logs:CreateLogStream': "Lambda writes the function's log group with its role",
  'logs:PutLogEvents': "Lambda writes the function's log group with its role",
  'xray:PutTraceSegments': "Lambda's active tracing sends the trace with the function's role",
  'xray:PutTelemetryRecords': "Lambda's active tracing sends the trace with the function's role",
  'sqs:SendMessage':
    "Lambda puts a failed asynchronous event in the function's dead-letter queue with its role",
  's3:ListBucket':
    'each function reads status/<drop>.json first: were it deleted mid-run, S3 must answer 404, not 403, which only a caller that may list the bucket gets',
};

export interface CallDecision {
  readonly function: string;
  readonly operation: string;
  readonly action: string;
  readonly resource: string;
  readonly allowed: boolean;
  /** The role's statement that allows it: its number and resource, or why the call is denied. */
  readonly statement: string;
}

export interface PermissionsReport {
  readonly decisions: readonly CallDecision[];
  /** Granted actions no recorded call uses: `<function> <action> (statement N)`. */
  readonly unused: readonly string[];
}

export type Simulate = typeof runSimulation;

/** The kept set of recorded calls (recorded-calls.json, inlined into the built command). */
export const RECORDED_CALLS = calls as readonly AwsCall[];

/** An ARN for `id`, which a template may give as a name: a secret's, a KMS key's id. */
const asArn = (id: string | undefined, service: string, path: (id: string) => string) =>
  id === undefined || id.startsWith('arn:') ? id : arn(service, path(id));

/** Where `fn`'s calls go, as the template configures it. */
function targetsOf(template: Template, fn: TemplateFunction, bucket: string): Targets {
  // Secrets Manager's ARN of a secret named N is N and six characters of its own.
  const secret = asArn(
    fn.environment.HOPPER_API_KEY_SECRET_ARN,
    'secretsmanager',
    (id) => `secret:${id}-AbCdEf`,
  );
  // An imported secret's key is named only by the grant of kms:Decrypt via Secrets Manager.
  const secretKey =
    propertyOf(template, ['AWS::SecretsManager::Secret'], secret ?? '', 'KmsKeyId') ??
    fn.policy.Statement.find((s) => JSON.stringify(s).includes('"kms:ViaService":"secretsmanager.'))
      ?.Resource;
  const encryption = propertyOf(template, ['AWS::S3::Bucket'], bucket, 'BucketEncryption') as
    | { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { KMSMasterKeyID?: string } }] }
    | undefined;
  const bucketKey =
    encryption?.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.KMSMasterKeyID;
  return {
    bucket,
    secret,
    secretKey: asArn(secretKey as string | undefined, 'kms', (id) => `key/${id}`),
    bucketKey: asArn(bucketKey, 'kms', (id) => `key/${id}`),
    stateMachine: fn.environment.HOPPER_STATE_MACHINE_ARN,
    // Another run of the drop, named as Hopper names runs.
    execution: executionArn(template, 'drop-0123456789abcdef0123456789abcdef'),
    eventSource: fn.environment.HOPPER_EVENT_SOURCE ?? 'hopper',
  };
}

/**
 * A KMS key's default policy, which lets the account's IAM policies grant its use: what an imported
 * key is taken to have (its own policy is not in the template; docs/deploy.md says so).
 */
const DEFAULT_KEY_POLICY = {
  Version: '2012-10-17',
  Statement: [
    { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: 'kms:*', Resource: '*' },
  ],
};

/** The resource policy in the way of `request`, if the template has one. */
function policyInTheWay(template: Template, { on, resource }: IamRequest): unknown {
  const bucket = resource.replace(/^arn:[^:]+:s3:::/, '').split('/')[0] ?? '';
  const bucketPolicy = ['AWS::S3::BucketPolicy', 'Bucket', bucket, 'PolicyDocument'] as const;
  const keyPolicy = ['AWS::KMS::Key', undefined, resource, 'KeyPolicy'] as const;
  const way = {
    object: bucketPolicy,
    bucket: bucketPolicy,
    secret: ['AWS::SecretsManager::ResourcePolicy', 'SecretId', resource, 'ResourcePolicy'] as const,
    bucketKey: keyPolicy,
    secretKey: keyPolicy,
  }[on as string];
  const policy = way && propertyOf(template, [way[0], way[1]], way[2], way[3]);
  return policy ?? (way === keyPolicy ? DEFAULT_KEY_POLICY : undefined);
}

/** `request` of `fn` decided; the statements that allow it are added to `used`. */
async function decide(simulate: Simulate, template: Template, fn: TemplateFunction, request: IamRequest) {
  const answer = await simulate(
    {
      request: {
        principal: `arn:aws:iam::${ACCOUNT}:role/Hopper${fn.name}`,
        action: request.action,
        resource: { resource: request.resource, accountId: ACCOUNT },
        contextVariables: { 'aws:SecureTransport': 'true', ...request.context },
      },
      identityPolicies: [{ name: fn.name, policy: fn.policy }],
      resourcePolicy: policyInTheWay(template, request),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (answer.resultType === 'error') return { allowed: false, statement: answer.errors.message, by: [] };
  const result = answer.resultType === 'single' ? answer.result : answer.results[0];
  const by = (result?.analysis.identityAnalysis?.allowStatements ?? []).map(
    (allow) => allow.explain.identifier,
  );
  const allowed = answer.overallResult === 'Allowed';
  const first = fn.policy.Statement[Number(by[0]) - 1];
  return {
    allowed,
    statement: allowed ? `#${by[0] ?? ''} ${JSON.stringify(first?.Resource)}` : answer.overallResult,
    by,
  };
}

/** Each recorded call decided for the role `template` gives its function, and the unused grants. */
export async function checkPermissions(
  template: Template,
  calls: readonly AwsCall[],
  simulate: Simulate,
): Promise<PermissionsReport> {
  const functions = new Map(templateFunctions(template).map((fn) => [fn.name, fn]));
  const bucket = bucketName(template);
  const used = new Set<string>();
  const decisions: CallDecision[] = [];
  for (const call of calls) {
    // A function the template lacks has no grant: each of its calls is denied.
    const fn = functions.get(call.function) ?? {
      name: call.function,
      policy: { Version: '2012-10-17', Statement: [] },
      environment: {},
    };
    for (const request of iamRequests(call, targetsOf(template, fn, bucket))) {
      const { by, ...decision } = await decide(simulate, template, fn, request);
      for (const statement of by) used.add(`${fn.name} ${request.action} ${statement}`);
      const { action, resource } = request;
      decisions.push({ function: fn.name, operation: call.operation, action, resource, ...decision });
    }
  }
  const unused = [...functions.values()].flatMap((fn) =>
    fn.policy.Statement.flatMap(({ Effect, Action, Resource }, index) =>
      [Action]
        .flat()
        .filter((action) => Effect === 'Allow' && EXEMPT[action] === undefined)
        .filter((action) => !used.has(`${fn.name} ${action} ${String(index + 1)}`))
        .map(
          (action) => `${fn.name} ${action} (statement #${String(index + 1)} ${JSON.stringify(Resource)})`,
        ),
    ),
  );
  return { decisions, unused };
}
