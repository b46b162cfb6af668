/**
 * Template assertions for the security and wiring properties the stack promises (issue 3):
 * the bucket, the EventBridge rule and its dead-letter queue, every Lambda's runtime, limits,
 * environment and exact permissions, the state machine's logging and tracing, the alarms, and
 * the settings read from context.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { TRAIN_JSON_KEY_WILDCARD } from '../../lambdas/storage/keys.js';
import {
  EXISTING_RESOURCES,
  actionsOf,
  bucketArnIn,
  functionNamed,
  objectPattern,
  resourcesOf,
  roleStatements,
  synthesize,
  type CfnResource,
} from './helpers.js';

const defaults = synthesize();
const existing = synthesize(EXISTING_RESOURCES);

const TASK_NAMES = [
  'ValidateDrop',
  'CreateDataset',
  'UploadFiles',
  'PollDataset',
  'Structure',
  'PickDecisions',
  'LabelExamples',
  'StartTraining',
  'PollModel',
  'CopyModel',
  'Report',
] as const;

/** What every Lambda role has: writing to its own log group, and X-Ray. */
const LOGS_AND_TRACING = [
  'logs:CreateLogStream',
  'logs:PutLogEvents',
  'xray:PutTelemetryRecords',
  'xray:PutTraceSegments',
];
const READ = ['s3:GetObject'];
const READ_WRITE = ['s3:GetObject', 's3:PutObject'];
const MULTIPART_WRITE = ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'];

/** What each Task may do, written out independently of infra/tasks.ts (docs/pipeline.md). */
const EXPECTED: Record<
  (typeof TASK_NAMES)[number],
  { timeout: number; objects: Record<string, string[]>; secret: boolean }
> = {
  ValidateDrop: { timeout: 60, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: false },
  CreateDataset: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  UploadFiles: { timeout: 900, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  PollDataset: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  Structure: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  PickDecisions: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  LabelExamples: { timeout: 900, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  StartTraining: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  PollModel: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  CopyModel: { timeout: 900, objects: { 'models/*': MULTIPART_WRITE, 'status/*': READ_WRITE }, secret: true },
  Report: { timeout: 60, objects: { 'status/*': READ_WRITE }, secret: false },
};

function resourcesOfType(template: typeof defaults.template, type: string): [string, CfnResource][] {
  return Object.entries(template.findResources(type) as Record<string, CfnResource>);
}

function hopperBucketId(): string {
  const buckets = resourcesOfType(defaults.template, 'AWS::S3::Bucket').filter(
    ([, bucket]) => bucket.Properties.NotificationConfiguration !== undefined,
  );
  expect(buckets).toHaveLength(1);
  return buckets[0]![0];
}

describe('the bucket', () => {
  it('is encrypted, versioned, blocks public access and sends its events to EventBridge', () => {
    defaults.template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      VersioningConfiguration: { Status: 'Enabled' },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      NotificationConfiguration: { EventBridgeConfiguration: { EventBridgeEnabled: true } },
    });
  });

  it('expires old inbox objects and old versions and aborts stale multipart uploads', () => {
    const bucket = defaults.template.findResources('AWS::S3::Bucket')[hopperBucketId()] as CfnResource;
    const rules = (bucket.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({ Prefix: 'inbox/', ExpirationInDays: 30, Status: 'Enabled' }),
    );
    expect(rules).toContainEqual(
      expect.objectContaining({
        NoncurrentVersionExpiration: { NoncurrentDays: 30 },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 },
        Status: 'Enabled',
      }),
    );
  });

  it('denies every request that is not over TLS (1.2 or newer)', () => {
    const bucketId = hopperBucketId();
    const arn = { 'Fn::GetAtt': [bucketId, 'Arn'] };
    defaults.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            Resource: [arn, { 'Fn::Join': ['', [arn, '/*']] }],
          }),
          Match.objectLike({ Effect: 'Deny', Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } } }),
        ]),
      },
    });
  });

  it('logs server access to an encrypted, private, TLS-only log bucket', () => {
    const bucket = defaults.template.findResources('AWS::S3::Bucket')[hopperBucketId()] as CfnResource;
    const logBucketId = (bucket.Properties.LoggingConfiguration as { DestinationBucketName: { Ref: string } })
      .DestinationBucketName.Ref;
    const logBucket = defaults.template.findResources('AWS::S3::Bucket')[logBucketId] as CfnResource;
    expect(logBucket.Properties).toMatchObject({
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, RestrictPublicBuckets: true },
    });
    defaults.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logBucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('keeps inbox objects as long as inboxRetentionDays says', () => {
    const { template } = synthesize({ inboxRetentionDays: '7' });
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([Match.objectLike({ Prefix: 'inbox/', ExpirationInDays: 7 })]),
      },
    });
  });

  it('uses an existing bucket by name and turns on its EventBridge notifications', () => {
    existing.template.resourceCountIs('AWS::S3::Bucket', 0);
    existing.template.hasResourceProperties('Custom::S3BucketNotifications', {
      BucketName: EXISTING_RESOURCES.bucketName,
      NotificationConfiguration: { EventBridgeConfiguration: {} },
      Managed: false,
    });
  });
});

describe('the way in', () => {
  it('matches Object Created events of inbox/*/train.json in the bucket', () => {
    defaults.template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.s3'],
        'detail-type': ['Object Created'],
        detail: {
          bucket: { name: [{ Ref: hopperBucketId() }] },
          object: { key: [{ wildcard: TRAIN_JSON_KEY_WILDCARD }] },
        },
      },
    });
    expect(TRAIN_JSON_KEY_WILDCARD).toBe('inbox/*/train.json');
    existing.template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { detail: { bucket: { name: [EXISTING_RESOURCES.bucketName] } } },
    });
  });

  it('invokes the trigger with retries, and sends what it cannot deliver to a dead-letter queue', () => {
    const trigger = functionNamed(defaults.template, 'Trigger');
    const [queueId] = resourcesOfType(defaults.template, 'AWS::SQS::Queue').map(([id]) => id);
    const queueArn = { 'Fn::GetAtt': [queueId, 'Arn'] };
    defaults.template.hasResourceProperties('AWS::Events::Rule', {
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [trigger.id, 'Arn'] },
          DeadLetterConfig: { Arn: queueArn },
          RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86400 },
        }),
      ],
    });
    // Failed asynchronous invocations of the trigger itself land in the same queue.
    expect(trigger.resource.Properties.DeadLetterConfig).toEqual({ TargetArn: queueArn });
    defaults.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: trigger.id },
      MaximumRetryAttempts: 2,
    });
    defaults.template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
    defaults.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
          }),
        ]),
      },
    });
  });

  it('lets the trigger start executions of the state machine and nothing else', () => {
    const trigger = functionNamed(defaults.template, 'Trigger');
    const [machineId] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine').map(
      ([id]) => id,
    );
    expect(trigger.resource.Properties.Environment).toEqual({
      Variables: { HOPPER_STATE_MACHINE_ARN: { Ref: machineId }, NODE_OPTIONS: '--enable-source-maps' },
    });
    const statements = roleStatements(defaults.template, trigger.resource);
    const actions = statements.flatMap(actionsOf).sort();
    expect(actions).toEqual(
      [
        ...LOGS_AND_TRACING,
        'sqs:SendMessage', // its dead-letter queue
        'states:StartExecution',
      ].sort(),
    );
    const start = statements.find((statement) => actionsOf(statement).includes('states:StartExecution'))!;
    expect(resourcesOf(start)).toEqual([{ Ref: machineId }]);
  });
});

describe('the Lambda functions', () => {
  it('are the eleven Tasks and the trigger, and nothing else', () => {
    defaults.template.resourceCountIs('AWS::Lambda::Function', TASK_NAMES.length + 1);
  });

  it.each([...TASK_NAMES, 'Trigger'])(
    '%s runs Node.js 24 on ARM with X-Ray, and logs to its own log group with a retention',
    (name) => {
      const { resource } = functionNamed(defaults.template, name);
      expect(resource.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        Handler: 'index.handler',
      });
      const logGroupId = (resource.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      const logGroup = defaults.template.findResources('AWS::Logs::LogGroup')[logGroupId] as CfnResource;
      expect(logGroup.Properties.RetentionInDays).toBe(90);
      const logWrites = roleStatements(defaults.template, resource).filter((statement) =>
        actionsOf(statement).some((action) => action.startsWith('logs:')),
      );
      expect(logWrites.flatMap(resourcesOf)).toEqual([{ 'Fn::GetAtt': [logGroupId, 'Arn'] }]);
    },
  );

  it.each(TASK_NAMES)('%s has its timeout and finds the service URL and the secret', (name) => {
    const { resource } = functionNamed(defaults.template, name);
    const [secretId] = resourcesOfType(defaults.template, 'AWS::SecretsManager::Secret').map(([id]) => id);
    expect(resource.Properties.Timeout).toBe(EXPECTED[name].timeout);
    expect(resource.Properties.Environment).toEqual({
      Variables: {
        HOPPER_SERVICE_URL: { Ref: 'ServiceUrl' },
        HOPPER_API_KEY_SECRET_ARN: { Ref: secretId },
        NODE_OPTIONS: '--enable-source-maps',
      },
    });
  });

  it.each(TASK_NAMES)(
    '%s may touch exactly its own key prefixes, and the secret only if it calls the service',
    (name) => {
      for (const hopper of [defaults, existing]) {
        const { resource } = functionNamed(hopper.template, name);
        const statements = roleStatements(hopper.template, resource);
        const bucketArn = bucketArnIn(hopper);
        const objects: Record<string, string[]> = {};
        const other: string[] = [];
        for (const statement of statements) {
          expect(statement.Effect).toBe('Allow');
          for (const target of resourcesOf(statement)) {
            const pattern = objectPattern(target, bucketArn);
            if (pattern === null) other.push(...actionsOf(statement));
            else objects[pattern] = [...(objects[pattern] ?? []), ...actionsOf(statement)].sort();
          }
        }
        expect(objects).toEqual(EXPECTED[name].objects);

        // Listing key names of the bucket (so a missing key answers 404, not 403), nothing more.
        const list = statements.filter((statement) => actionsOf(statement).includes('s3:ListBucket'));
        expect(list).toHaveLength(1);
        expect(actionsOf(list[0]!)).toEqual(['s3:ListBucket']);
        expect(resourcesOf(list[0]!)).toEqual([bucketArn]);
        expect(list[0]!.Condition).toBeUndefined();

        const secret = EXPECTED[name].secret
          ? ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue']
          : [];
        expect(other.sort()).toEqual([...LOGS_AND_TRACING, 's3:ListBucket', ...secret].sort());
      }
    },
  );

  it('lets only the service-calling Tasks read exactly the one secret', () => {
    const [secretId] = resourcesOfType(defaults.template, 'AWS::SecretsManager::Secret').map(([id]) => id);
    for (const name of TASK_NAMES) {
      const statements = roleStatements(defaults.template, functionNamed(defaults.template, name).resource);
      const secretReads = statements.filter((statement) =>
        actionsOf(statement).some((action) => action.startsWith('secretsmanager:')),
      );
      expect(secretReads.flatMap(resourcesOf)).toEqual(EXPECTED[name].secret ? [{ Ref: secretId }] : []);
    }
  });
});

describe('the API key', () => {
  it('is never in the template: the new secret holds a generated placeholder', () => {
    defaults.template.hasResourceProperties('AWS::SecretsManager::Secret', {
      Name: 'Hopper/training-service-api-key',
      GenerateSecretString: {},
      SecretString: Match.absent(),
    });
    for (const hopper of [defaults, existing]) {
      const text = JSON.stringify(hopper.template.toJSON());
      expect(text).not.toContain('"SecretString"');
      // Nor resolved into a property at deploy time (a dynamic reference would land in the env).
      expect(text).not.toContain('{{resolve:secretsmanager');
    }
    defaults.template.hasOutput('ApiKeySecretName', { Value: 'Hopper/training-service-api-key' });
  });

  it('can be an existing secret, given by name', () => {
    existing.template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    const { resource } = functionNamed(existing.template, 'CreateDataset');
    expect(
      (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
    ).toMatchObject({
      HOPPER_API_KEY_SECRET_ARN: EXISTING_RESOURCES.apiKeySecretName,
      HOPPER_SERVICE_URL: EXISTING_RESOURCES.serviceUrl,
    });
    const reads = roleStatements(existing.template, resource).filter((statement) =>
      actionsOf(statement).includes('secretsmanager:GetSecretValue'),
    );
    expect(JSON.stringify(reads.flatMap(resourcesOf))).toContain(
      `:secret:${EXISTING_RESOURCES.apiKeySecretName}-??????`,
    );
  });
});

describe('the state machine', () => {
  it('is a Standard state machine that logs everything to CloudWatch Logs and traces with X-Ray', () => {
    const [[, machine]] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine') as [
      [string, CfnResource],
    ];
    expect(machine.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: true },
    });
    const destinations = (
      machine.Properties.LoggingConfiguration as {
        Destinations: { CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [string, string] } } }[];
      }
    ).Destinations;
    const logGroupId = destinations[0]!.CloudWatchLogsLogGroup.LogGroupArn['Fn::GetAtt'][0];
    expect(defaults.template.findResources('AWS::Logs::LogGroup')[logGroupId]).toBeDefined();
  });
});

describe('monitoring', () => {
  it('alarms on failed, timed-out and aborted runs, dead letters and trigger errors', () => {
    const [topicId] = resourcesOfType(defaults.template, 'AWS::SNS::Topic').map(([id]) => id);
    const alarms = resourcesOfType(defaults.template, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm);
    expect(alarms.map((alarm) => alarm.Properties.MetricName).sort()).toEqual([
      'ApproximateNumberOfMessagesVisible',
      'Errors',
      'ExecutionsAborted',
      'ExecutionsFailed',
      'ExecutionsTimedOut',
    ]);
    for (const alarm of alarms) {
      expect(alarm.Properties).toMatchObject({
        AlarmActions: [{ Ref: topicId }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('sends alarms to a KMS-encrypted, TLS-only topic, e-mailed when notificationEmail is set', () => {
    defaults.template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    defaults.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    defaults.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    defaults.template.resourceCountIs('AWS::SNS::Subscription', 0);
    existing.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: EXISTING_RESOURCES.notificationEmail,
    });
  });
});

describe('settings from context', () => {
  it('asks for the service URL at deploy time when serviceUrl is not given', () => {
    defaults.template.hasParameter('ServiceUrl', { Type: 'String', AllowedPattern: '^https://[^\\s]+$' });
    expect(existing.template.toJSON().Parameters).not.toHaveProperty('ServiceUrl');
  });

  it.each([
    [{ serviceUrl: 'http://train.example.com' }, /https/],
    [{ serviceUrl: 'https://train.example.com/v1' }, /without \/v1/],
    [{ serviceUrl: 'not a url' }, /not a URL/],
    [{ inboxRetentionDays: '0' }, /inboxRetentionDays/],
    [{ bucketName: 'Bad_Bucket' }, /bucketName/],
    [{ notificationEmail: 'nobody' }, /notificationEmail/],
    [
      { bucketName: 'team-drops', inboxRetentionDays: '7' },
      /inboxRetentionDays applies to a bucket the stack creates/,
    ],
  ])('refuses %j', (context, message) => {
    expect(() => synthesize(context)).toThrow(message);
  });
});
