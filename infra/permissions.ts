/**
 * A Task's access (infra/tasks.ts) as IAM statements: S3 object actions on its own key prefixes
 * only, ListBucket (key names) on the bucket, the API key secret (and its own KMS key, if it has
 * one) only for the steps that call the training service, and PutEvents only for the steps that
 * put run events.
 */
import { Stack } from 'aws-cdk-lib';
import { PolicyStatement, type IRole } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { INBOX_PREFIX, MODELS_PREFIX, STATUS_PREFIX } from '../lambdas/storage/keys.js';
import { acknowledgeWildcardResource } from './nag.js';
import type { AreaAccess, BucketArea, TaskAccess } from './tasks.js';

export const AREA_PREFIX: Readonly<Record<BucketArea, string>> = {
  inbox: INBOX_PREFIX,
  status: STATUS_PREFIX,
  models: MODELS_PREFIX,
};

/** The object actions of each access level. */
export function objectActions(level: AreaAccess): string[] {
  if (level === 'read') return ['s3:GetObject'];
  if (level === 'multipart') {
    // copy_model: multipart upload (CreateMultipartUpload, UploadPart and Complete are all
    // s3:PutObject), abort on failure, HEAD to check the size, delete a copy of the wrong size.
    return ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:DeleteObject'];
  }
  return ['s3:GetObject', 's3:PutObject'];
}

/** The statements of `access.bucket` on `bucket`. */
export function bucketStatements(bucket: IBucket, access: TaskAccess): PolicyStatement[] {
  const areas = Object.entries(access.bucket) as [BucketArea, AreaAccess][];
  if (areas.length === 0) return [];
  const objects = areas.map(
    ([area, level]) =>
      new PolicyStatement({
        actions: objectActions(level),
        resources: [bucket.arnForObjects(`${AREA_PREFIX[area]}*`)],
      }),
  );
  // S3 answers a GET or HEAD of a missing key with 404 NoSuchKey (which the handlers rely on:
  // no status yet, no model.json yet) only to a caller allowed to list the bucket, and 403
  // otherwise. Whether a ListBucket grant limited by s3:prefix counts for that is not
  // documented, so the grant is the whole bucket: key names only, never object contents.
  const list = new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] });
  return [...objects, list];
}

export interface TaskResources {
  readonly bucket: IBucket;
  readonly apiKeySecret: ISecret;
  /** The customer managed key of the secret, if it has one. */
  readonly apiKeySecretKmsKeyArn?: string;
  /** The `source` of the run events a Task with `events` may put, and no other. */
  readonly eventSource: string;
}

/**
 * PutEvents on the account's default bus in the stack's region, for events of `source` only
 * (the `events:source` condition key): a Task cannot pose as another service on the bus.
 */
export function putRunEventsStatement(scope: IRole, source: string): PolicyStatement {
  const stack = Stack.of(scope);
  return new PolicyStatement({
    actions: ['events:PutEvents'],
    resources: [`arn:${stack.partition}:events:${stack.region}:${stack.account}:event-bus/default`],
    conditions: { StringEquals: { 'events:source': source } },
  });
}

/**
 * Grants `access` to a function's role and acknowledges the one cdk-nag finding it implies: the
 * `<prefix>*` object wildcards, which are the narrowest grant possible because drop folder names
 * (and so every key under the prefix) are chosen by users at run time.
 */
export function grantTaskAccess(role: IRole, access: TaskAccess, resources: TaskResources): void {
  for (const statement of bucketStatements(resources.bucket, access)) role.addToPrincipalPolicy(statement);
  for (const area of Object.keys(access.bucket) as BucketArea[]) {
    acknowledgeWildcardResource(
      role,
      resources.bucket.arnForObjects(`${AREA_PREFIX[area]}*`),
      `Objects under ${AREA_PREFIX[area]} are named after drop folders that users choose at run time; ` +
        `the grant is limited to that prefix and to the actions this step needs.`,
    );
  }
  if (access.apiKey) resources.apiKeySecret.grantRead(role);
  const key = access.apiKey ? resources.apiKeySecretKmsKeyArn : undefined;
  if (key !== undefined) {
    // The secret's own key, for the role only in Secrets Manager's calls (GetSecretValue) in this region.
    const secretsManager = `secretsmanager.${Stack.of(role).region}.amazonaws.com`;
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['kms:Decrypt'],
        resources: [key],
        conditions: { StringEquals: { 'kms:ViaService': secretsManager } },
      }),
    );
  }
  if (access.events === true) role.addToPrincipalPolicy(putRunEventsStatement(role, resources.eventSource));
}
