/**
 * A Task's access (infra/tasks.ts) as IAM statements: S3 object actions on its own key prefixes
 * only, ListBucket (key names) on the bucket, the API key secret (and its own KMS key, if it has
 * one) only for the steps that call the training service, PutEvents only for the steps that put
 * run events, and DescribeExecution of the state machine's own executions only for the step that
 * asks whether another run still runs.
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import { Policy, PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { INBOX_PREFIX, MODELS_PREFIX, STATUS_PREFIX } from '../lambdas/storage/keys.js';
import type { HopperPipelineProps } from './constructs/pipeline-props.js';
import { acknowledgeWildcardResource } from './nag.js';
import type { AreaAccess, BucketArea, TaskAccess } from './tasks.js';

export const AREA_PREFIX: Readonly<Record<BucketArea, string>> = {
  inbox: INBOX_PREFIX,
  status: STATUS_PREFIX,
  models: MODELS_PREFIX,
};

/** The object actions of each access level. */
const OBJECT_ACTIONS: Readonly<Record<AreaAccess, readonly string[]>> = {
  read: ['s3:GetObject'],
  readWrite: ['s3:GetObject', 's3:PutObject'],
  // copy_model: multipart upload (CreateMultipartUpload, UploadPart and Complete are all
  // s3:PutObject), abort on failure, HEAD to check the size, delete a copy of the wrong size.
  multipart: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:DeleteObject'],
};

/** What the grants are on; `eventSource`: the only `source` of the run events a Task may put. */
export type TaskResources = Pick<HopperPipelineProps, 'bucket' | 'apiKeySecret'> & {
  readonly eventSource: string;
};

/**
 * PutEvents on the account's default bus in the stack's region, for events of `source` only
 * (the `events:source` condition key): a Task cannot pose as another service on the bus. The key
 * is multivalued (one source per entry), so every entry's source must be it and one must be given.
 */
export function putRunEventsStatement(scope: IRole, source: string): PolicyStatement {
  const stack = Stack.of(scope);
  return new PolicyStatement({
    actions: ['events:PutEvents'],
    resources: [`arn:${stack.partition}:events:${stack.region}:${stack.account}:event-bus/default`],
    conditions: {
      'ForAllValues:StringEquals': { 'events:source': source },
      Null: { 'events:source': 'false' },
    },
  });
}

/**
 * Grants `access` to a function's role and acknowledges the one cdk-nag finding it implies: the
 * `<prefix>*` object wildcards, which are the narrowest grant possible because drop folder names
 * (and so every key under the prefix) are chosen by users at run time.
 */
export function grantTaskAccess(role: IRole, access: TaskAccess, resources: TaskResources): void {
  const { bucket } = resources;
  const areas = Object.entries(access.bucket) as [BucketArea, AreaAccess][];
  for (const [area, level] of areas) {
    const objects = bucket.arnForObjects(`${AREA_PREFIX[area]}*`);
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: [...OBJECT_ACTIONS[level]], resources: [objects] }),
    );
    acknowledgeWildcardResource(
      role,
      objects,
      `Objects under ${AREA_PREFIX[area]} are named after drop folders that users choose at run time; ` +
        `the grant is limited to that prefix and to the actions this step needs.`,
    );
  }
  // S3 answers a GET or HEAD of a missing key with 404 NoSuchKey (which the handlers rely on:
  // no status yet, no model.json yet) only to a caller allowed to list the bucket, and 403
  // otherwise. Whether a ListBucket grant limited by s3:prefix counts for that is not
  // documented, so the grant is the whole bucket: key names only, never object contents.
  if (areas.length > 0) {
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
    );
  }
  const secret = resources.apiKeySecret;
  if (access.apiKey) {
    // GetSecretValue only (grantRead adds DescribeSecret, which no code calls); a secret imported
    // by name matches any of the six characters Secrets Manager appends to its ARN.
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
      }),
    );
  }
  // A secret's own KMS key (a secret imported with its encryptionKey): decrypting through Secrets
  // Manager in this region only.
  const key = access.apiKey ? secret.encryptionKey : undefined;
  if (key !== undefined) {
    const secretsManager = `secretsmanager.${Stack.of(role).region}.amazonaws.com`;
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['kms:Decrypt'],
        resources: [key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': secretsManager } },
      }),
    );
  }
  if (access.events === true) role.addToPrincipalPolicy(putRunEventsStatement(role, resources.eventSource));
}

/**
 * DescribeExecution of `stateMachine`'s executions for each role, as a policy of its own: the
 * state machine refers to the functions, so a grant in a function role's default policy (which
 * each function waits for) would close a reference cycle. The `:*` wildcard is the narrowest
 * grant: execution names are the runs' ids, made at run time.
 */
export function grantDescribeExecutions(
  scope: Construct,
  id: string,
  stateMachine: StateMachine,
  roles: readonly IRole[],
): Policy | undefined {
  if (roles.length === 0) return undefined;
  const stack = Stack.of(scope);
  const executions = stack.formatArn({
    service: 'states',
    resource: 'execution',
    resourceName: `${stateMachine.stateMachineName}:*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
  const policy = new Policy(scope, id, {
    statements: [new PolicyStatement({ actions: ['states:DescribeExecution'], resources: [executions] })],
    roles: [...roles],
  });
  acknowledgeWildcardResource(
    policy,
    executions,
    "Execution names are Hopper's run ids, made at run time; the grant is this state machine's executions only, and reads their status.",
  );
  return policy;
}
