/**
 * The bucket users drop folders into and Hopper writes status and models to (layout:
 * lambdas/storage/keys.ts). New by default: encrypted, versioned, TLS only, no public access,
 * EventBridge notifications on, server access logs to a log bucket, and lifecycle rules for old
 * inbox data, old versions and abandoned multipart uploads. An existing bucket can be used
 * instead; then only its EventBridge notifications are turned on, the rest stays its owner's.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  ObjectOwnership,
  type CfnBucket,
  type LifecycleRule,
  type IBucket,
} from 'aws-cdk-lib/aws-s3';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { EVENT_MARKERS_PREFIX, INBOX_PREFIX } from '../../lambdas/storage/keys.js';
import { acknowledgeRule } from '../nag.js';

export interface HopperStorageProps {
  /**
   * A bucket to use instead of creating one (the Hopper construct's `bucket`). Its EventBridge
   * notifications are turned on (for an imported bucket through CDK's bucket-notifications custom
   * resource, which keeps its other notification settings); the rest stays its owner's.
   * @default - a new bucket
   */
  readonly bucket?: IBucket;
  /** Days an object under inbox/ is kept (new bucket only). @default 30 */
  readonly inboxRetentionDays?: number;
  /** What happens to the new buckets when the stack is deleted. @default RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE */
  readonly removalPolicy?: RemovalPolicy;
}

export const STORAGE_DEFAULTS = {
  inboxRetentionDays: 30,
  noncurrentVersionRetentionDays: 30,
  abortIncompleteUploadsAfterDays: 1,
  accessLogRetentionDays: 90,
  eventMarkerRetentionDays: 30,
} as const;

/** What both new buckets are: S3-encrypted, private, owned by the bucket owner, TLS 1.2+ only. */
const PRIVATE_TLS_ONLY = {
  encryption: BucketEncryption.S3_MANAGED, // the only encryption S3 log delivery supports
  blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
  objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
  enforceSSL: true,
  minimumTLSVersion: 1.2,
} as const;

export class HopperStorage extends Construct {
  readonly bucket: IBucket;
  /** The server access log bucket; absent when a bucket was given. */
  readonly accessLogBucket?: Bucket;

  constructor(scope: Construct, id: string, props: HopperStorageProps = {}) {
    super(scope, id);
    if (props.bucket !== undefined) {
      // Never a pipeline no drop can start: the given bucket sends its events to EventBridge.
      props.bucket.enableEventBridgeNotification();
      acknowledgeNotificationsHandler(this);
      this.bucket = props.bucket;
      return;
    }
    // Kept on update and delete, but removed when the stack's first create fails (nothing in them yet).
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE;
    this.accessLogBucket = new Bucket(this, 'AccessLogs', {
      ...PRIVATE_TLS_ONLY,
      lifecycleRules: [
        { id: 'ExpireOldLogs', expiration: Duration.days(STORAGE_DEFAULTS.accessLogRetentionDays) },
      ],
      removalPolicy,
    });
    const bucket = new Bucket(this, 'Bucket', {
      ...PRIVATE_TLS_ONLY,
      versioned: true,
      lifecycleRules: bucketLifecycleRules(props),
      removalPolicy,
    });
    deliverAccessLogs(bucket, this.accessLogBucket);
    // EventBridge delivery set on the bucket resource itself: Bucket's `eventBridgeEnabled` would
    // add a custom-resource Lambda to do the same, which an owned bucket does not need.
    (bucket.node.defaultChild as CfnBucket).notificationConfiguration = {
      eventBridgeConfiguration: { eventBridgeEnabled: true },
    };
    this.bucket = bucket;
  }
}

/**
 * Server access logs of `bucket` into `logs` under hopper/, delivered under a bucket policy. Set
 * here rather than through `serverAccessLogsBucket`, which without the app's feature flag
 * `@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy` grants the ACL LogDeliveryWrite instead, and
 * fails on a bucket whose owner enforces ownership (ACLs off): Hopper synthesizes the same in any app.
 */
function deliverAccessLogs(bucket: Bucket, logs: Bucket): void {
  const prefix = 'hopper/';
  (bucket.node.defaultChild as CfnBucket).loggingConfiguration = {
    destinationBucketName: logs.bucketName,
    logFilePrefix: prefix,
  };
  logs.addToResourcePolicy(
    new PolicyStatement({
      principals: [new ServicePrincipal('logging.s3.amazonaws.com')],
      actions: ['s3:PutObject'],
      resources: [logs.arnForObjects(`${prefix}*`)],
      conditions: {
        ArnLike: { 'aws:SourceArn': bucket.bucketArn },
        StringEquals: { 'aws:SourceAccount': Stack.of(bucket).account },
      },
    }),
  );
}

/** The new bucket's lifecycle: old inbox data, old run event markers, old versions, stale uploads. */
function bucketLifecycleRules(props: HopperStorageProps): LifecycleRule[] {
  return [
    {
      id: 'ExpireOldInbox',
      prefix: INBOX_PREFIX,
      expiration: Duration.days(props.inboxRetentionDays ?? STORAGE_DEFAULTS.inboxRetentionDays),
    },
    {
      // A marker only matters while its run can still retry a step (at most the execution
      // timeout, 15 days: infra/run-limits.ts): a month later it is clutter.
      id: 'ExpireRunEventMarkers',
      prefix: EVENT_MARKERS_PREFIX,
      expiration: Duration.days(STORAGE_DEFAULTS.eventMarkerRetentionDays),
    },
    {
      id: 'ExpireOldVersionsAndUploads',
      noncurrentVersionExpiration: Duration.days(STORAGE_DEFAULTS.noncurrentVersionRetentionDays),
      abortIncompleteMultipartUploadAfter: Duration.days(STORAGE_DEFAULTS.abortIncompleteUploadsAfterDays),
      expiredObjectDeleteMarker: true,
    },
  ];
}

/**
 * CDK's bucket-notifications handler (a singleton Lambda at stack level) turns EventBridge on for
 * an existing bucket; its role comes with the AWS managed basic execution policy, which CDK sets
 * and a construct cannot replace.
 */
function acknowledgeNotificationsHandler(scope: Construct): void {
  const handler = Stack.of(scope).node.children.find((child) =>
    child.node.id.startsWith('BucketNotificationsHandler'),
  );
  // A bucket of the same stack may take its notification settings without the handler.
  if (handler === undefined) return;
  acknowledgeRule(
    handler,
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    "CDK's own bucket-notifications custom resource (it turns on EventBridge for the existing bucket " +
      'given to Hopper) uses this role for writing its logs; CDK fixes the policy, and the ' +
      'function only runs during deployments.',
  );
}
