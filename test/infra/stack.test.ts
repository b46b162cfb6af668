/**
 * Template assertions for the security and wiring properties the stack promises (issue 3):
 * the bucket, the EventBridge rule and its dead-letter queue, every Lambda's runtime, limits,
 * environment and exact permissions, the state machine's logging and tracing, the alarms, and
 * the settings read from context.
 */
import type { CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { aslOf } from '../../scripts/local-definition.js';
import { EXECUTION_TIMEOUT_SECONDS, MAX_WAIT_SECONDS, SLOW_RUN_SECONDS } from '../../infra/run-limits.js';
import { MAX_WAIT_SECONDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { TRAIN_JSON_KEY_WILDCARD } from '../../lambdas/storage/keys.js';
import {
  EXISTING_RESOURCES,
  actionsOf,
  bucketArnIn,
  functionNamed,
  objectPattern,
  resourcesOf,
  roleStatements,
  resourcesOfType,
  statementsFor,
  synthesize,
  type CfnResource,
  type Statement,
} from './helpers.js';
import { evaluate, type TemplateJson } from './physical-names.js';

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
  {
    timeout: number;
    objects: Record<string, string[]>;
    secret: boolean;
    events?: boolean;
    /** DescribeExecution of the state machine's executions (a claim's holder still running?). */
    executions?: boolean;
  }
> = {
  ValidateDrop: {
    timeout: 60,
    objects: { 'inbox/*': READ, 'status/*': READ_WRITE },
    secret: false,
    events: true,
  },
  CreateDataset: { timeout: 300, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  UploadFiles: { timeout: 900, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  PollDataset: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true, executions: true },
  Structure: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  PickDecisions: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  LabelExamples: { timeout: 900, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  StartTraining: { timeout: 300, objects: { 'inbox/*': READ, 'status/*': READ_WRITE }, secret: true },
  PollModel: { timeout: 300, objects: { 'status/*': READ_WRITE }, secret: true },
  CopyModel: { timeout: 900, objects: { 'models/*': MULTIPART_WRITE, 'status/*': READ_WRITE }, secret: true },
  Report: {
    timeout: 60,
    objects: { 'models/*': READ_WRITE, 'status/*': READ_WRITE },
    secret: false,
    events: true,
  },
};

/** A template value as CloudFormation would resolve it for the stack Hopper in eu-west-1. */
function evaluated(value: unknown): string {
  const deployment = {
    stackName: 'Hopper',
    stackUuid: '0f1e2d3c-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
    region: 'eu-west-1',
    account: '123456789012',
  };
  return evaluate(value, deployment, defaults.template.toJSON() as TemplateJson);
}

function hopperBucketId(): string {
  const buckets = resourcesOfType(defaults.template, 'AWS::S3::Bucket').filter(
    ([, bucket]) => bucket.Properties.NotificationConfiguration !== undefined,
  );
  expect(buckets).toHaveLength(1);
  return buckets[0]![0];
}

/** What every function gets for Powertools (test/infra/observability.test.ts tests the level). */
const POWERTOOLS_ENV = {
  POWERTOOLS_LOG_LEVEL: 'INFO',
  POWERTOOLS_SERVICE_NAME: 'hopper',
  POWERTOOLS_METRICS_NAMESPACE: 'Hopper',
} as const;

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

  it('expires old inbox objects and old versions and aborts multipart uploads unfinished after a day', () => {
    const bucket = defaults.template.findResources('AWS::S3::Bucket')[hopperBucketId()] as CfnResource;
    const rules = (bucket.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({ Prefix: 'inbox/', ExpirationInDays: 30, Status: 'Enabled' }),
    );
    expect(rules).toContainEqual(
      expect.objectContaining({
        NoncurrentVersionExpiration: { NoncurrentDays: 30 },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
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
    const queueArn = (trigger.resource.Properties.DeadLetterConfig as { TargetArn: unknown }).TargetArn;
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
    expect(queueArn).toEqual({ 'Fn::GetAtt': [expect.stringContaining('TriggerDeadLetters'), 'Arn'] });
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

  it('lets the trigger start executions of the state machine and read and write status/ (first statuses, probe records), nothing else', () => {
    const trigger = functionNamed(defaults.template, 'Trigger');
    const [machineId] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine').map(
      ([id]) => id,
    );
    expect(trigger.resource.Properties.Environment).toEqual({
      Variables: {
        HOPPER_STATE_MACHINE_ARN: { Ref: machineId },
        ...POWERTOOLS_ENV,
      },
    });
    const statements = roleStatements(defaults.template, trigger.resource);
    const actions = statements.flatMap(actionsOf).sort();
    expect(actions).toEqual(
      [
        ...LOGS_AND_TRACING,
        'sqs:SendMessage', // its dead-letter queue
        'states:StartExecution',
        's3:GetObject', // status/<drop>.json, conditional writes read it first
        's3:PutObject', // status/<drop>.json (a run's first status), status/.doctor/<probe id>.json
        's3:ListBucket', // a missing status file answers 404, not 403
      ].sort(),
    );
    const start = statements.find((statement) => actionsOf(statement).includes('states:StartExecution'))!;
    expect(resourcesOf(start)).toEqual([{ Ref: machineId }]);
    const status = statements.find((statement) => actionsOf(statement).includes('s3:PutObject'))!;
    expect(actionsOf(status).sort()).toEqual(['s3:GetObject', 's3:PutObject']);
    expect(resourcesOf(status)).toHaveLength(1);
    expect(JSON.stringify(resourcesOf(status))).toContain('"/status/*"');
  });

  it("lets PollDataset describe the state machine's own executions only, in a policy the functions do not wait for", () => {
    const [machineId] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine').map(
      ([id]) => id,
    );
    const policies = resourcesOfType(defaults.template, 'AWS::IAM::Policy').filter(([, policy]) =>
      JSON.stringify(policy).includes('states:DescribeExecution'),
    );
    expect(policies).toHaveLength(1);
    const [policyId, policy] = policies[0]!;
    const { resource: poll } = functionNamed(defaults.template, 'PollDataset');
    const role = (poll.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    expect(policy.Properties.Roles).toEqual([{ Ref: role }]);
    const [statement] = (policy.Properties.PolicyDocument as { Statement: { Resource: unknown }[] })
      .Statement;
    expect(evaluated(statement!.Resource)).toBe(
      `arn:aws:states:eu-west-1:123456789012:execution:${evaluated({ 'Fn::GetAtt': [machineId, 'Name'] })}:*`,
    );
    // The state machine refers to the functions: a function waiting for this policy would be a cycle.
    for (const [, fn] of resourcesOfType(defaults.template, 'AWS::Lambda::Function'))
      expect(JSON.stringify((fn as { DependsOn?: unknown }).DependsOn ?? [])).not.toContain(policyId);
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
      const logWrites = statementsFor(defaults.template, resource, 'logs');
      expect(logWrites.flatMap(resourcesOf)).toEqual([{ 'Fn::GetAtt': [logGroupId, 'Arn'] }]);
    },
  );

  it.each(TASK_NAMES)(
    '%s has its timeout, and is told the service URL and the secret only if it calls the service',
    (name) => {
      const { resource } = functionNamed(defaults.template, name);
      const [secretId] = resourcesOfType(defaults.template, 'AWS::SecretsManager::Secret').map(([id]) => id);
      expect(resource.Properties.Timeout).toBe(EXPECTED[name].timeout);
      const service = {
        HOPPER_SERVICE_URL: { Ref: 'ServiceUrl' },
        HOPPER_API_KEY_SECRET_ARN: { Ref: secretId },
      };
      expect(resource.Properties.Environment).toEqual({
        Variables: {
          ...(EXPECTED[name].secret ? service : {}),
          ...(EXPECTED[name].events === true ? { HOPPER_EVENT_SOURCE: 'hopper' } : {}),
          ...POWERTOOLS_ENV,
        },
      });
    },
  );

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

        const secret = EXPECTED[name].secret ? ['secretsmanager:GetSecretValue'] : [];
        // PutEvents is checked (resource, condition) in test/infra/notifications.test.ts.
        const events = EXPECTED[name].events === true ? ['events:PutEvents'] : [];
        const executions = EXPECTED[name].executions === true ? ['states:DescribeExecution'] : [];
        expect(other.sort()).toEqual(
          [...LOGS_AND_TRACING, 's3:ListBucket', ...secret, ...events, ...executions].sort(),
        );
      }
    },
  );

  it('lets only the service-calling Tasks read exactly the one secret', () => {
    const [secretId] = resourcesOfType(defaults.template, 'AWS::SecretsManager::Secret').map(([id]) => id);
    for (const name of TASK_NAMES) {
      const { resource } = functionNamed(defaults.template, name);
      const secretReads = statementsFor(defaults.template, resource, 'secretsmanager');
      expect(secretReads.flatMap(resourcesOf)).toEqual(EXPECTED[name].secret ? [{ Ref: secretId }] : []);
    }
  });
});

describe('the API key', () => {
  it('is never in the template: the new secret holds a generated placeholder', () => {
    const [[, secret]] = resourcesOfType(defaults.template, 'AWS::SecretsManager::Secret') as [
      [string, CfnResource],
    ];
    expect(secret.Properties).toMatchObject({ GenerateSecretString: {} });
    expect(secret.Properties.SecretString).toBeUndefined();
    for (const hopper of [defaults, existing]) {
      const text = JSON.stringify(hopper.template.toJSON());
      expect(text).not.toContain('"SecretString"');
      // Nor resolved into a property at deploy time (a dynamic reference would land in the env).
      expect(text).not.toContain('{{resolve:secretsmanager');
    }
    // Named `<stack>/training-service-api-key-<creation id>` (test/infra/names.test.ts); the
    // output gives the name to put the key under.
    defaults.template.hasOutput('ApiKeySecretName', { Value: secret.Properties.Name });
    expect(JSON.stringify(secret.Properties.Name)).toContain('Hopper/training-service-api-key-');
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

describe('a secret encrypted with its own KMS key (-c apiKeySecretKmsKeyArn)', () => {
  const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const withKey = synthesize({ ...EXISTING_RESOURCES, apiKeySecretKmsKeyArn: keyArn });
  const kmsStatements = (hopper: typeof defaults, name: string) =>
    statementsFor(hopper.template, functionNamed(hopper.template, name).resource, 'kms');

  it('lets exactly the functions that read the secret decrypt with the key, through Secrets Manager only', () => {
    for (const name of TASK_NAMES) {
      expect(kmsStatements(withKey, name), name).toEqual(
        EXPECTED[name].secret
          ? [
              expect.objectContaining({
                Effect: 'Allow',
                Action: 'kms:Decrypt',
                Resource: keyArn,
                Condition: {
                  StringEquals: {
                    'kms:ViaService': {
                      'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
                    },
                  },
                },
              }),
            ]
          : [],
      );
    }
    expect(kmsStatements(withKey, 'Trigger')).toEqual([]);
  });

  it('grants no KMS key without it', () => {
    for (const hopper of [defaults, existing]) {
      for (const name of [...TASK_NAMES, 'Trigger']) expect(kmsStatements(hopper, name), name).toEqual([]);
    }
  });

  it.each([
    [{ apiKeySecretKmsKeyArn: 'alias/team-secrets', apiKeySecretName: 'team/key' }, /is not a KMS key ARN/],
    [
      {
        apiKeySecretKmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:alias/team-secrets',
        apiKeySecretName: 'team/key',
      },
      /is not a KMS key ARN/,
    ],
    [
      { apiKeySecretKmsKeyArn: keyArn },
      /apiKeySecretKmsKeyArn: applies to the existing secret given by apiKeySecretName/,
    ],
  ])('refuses %j', (context, message) => {
    expect(() => synthesize(context)).toThrow(message);
  });
});

describe('the state machine', () => {
  const [[, machine]] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine') as [
    [string, CfnResource],
  ];

  it('is a Standard state machine that logs everything to CloudWatch Logs and traces with X-Ray', () => {
    expect(machine.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: true },
    });
  });

  it('logs to a log group under /aws/vendedlogs/states/, named for the stack and its creation', () => {
    const destinations = (
      machine.Properties.LoggingConfiguration as {
        Destinations: { CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [string, string] } } }[];
      }
    ).Destinations;
    expect(destinations).toHaveLength(1);
    const logGroupId = destinations[0]!.CloudWatchLogsLogGroup.LogGroupArn['Fn::GetAtt'][0];
    const logGroup = defaults.template.findResources('AWS::Logs::LogGroup')[logGroupId] as CfnResource;
    expect(evaluated(logGroup.Properties.LogGroupName)).toBe('/aws/vendedlogs/states/Hopper-0f1e2d3c');
    expect(logGroup.Properties.RetentionInDays).toBe(90);
  });

  it('stops a run after the longest time Hopper supports: its whole wait budget, plus a day', () => {
    const timeout = aslOf(defaults.stack.hopper.stateMachine).TimeoutSeconds;
    expect(timeout).toBe(EXECUTION_TIMEOUT_SECONDS);
    expect(EXECUTION_TIMEOUT_SECONDS).toBe(MAX_WAIT_SECONDS_PER_RUN + 24 * 3600);
    // Local mode's interpreter sets a Node.js timer for it, which cannot exceed 2^31 - 1 ms.
    expect(EXECUTION_TIMEOUT_SECONDS * 1000).toBeLessThan(2 ** 31);
    // A run that uses its whole wait budget ends with wait_limit (and a status file) first.
    expect(EXECUTION_TIMEOUT_SECONDS).toBeGreaterThan(MAX_WAIT_SECONDS);
  });
});

describe('monitoring', () => {
  // The alarm topic (the run notification topic is test/infra/notifications.test.ts's).
  const [topicId] = resourcesOfType(defaults.template, 'AWS::SNS::Topic')
    .map(([id]) => id)
    .filter((id) => id.includes('AlarmTopic'));
  const alarms = resourcesOfType(defaults.template, 'AWS::CloudWatch::Alarm');
  const composites = resourcesOfType(defaults.template, 'AWS::CloudWatch::CompositeAlarm');
  const notifying = [...alarms, ...composites].filter(
    ([, alarm]) => alarm.Properties.AlarmActions !== undefined,
  );
  const [machineId] = resourcesOfType(defaults.template, 'AWS::StepFunctions::StateMachine').map(
    ([id]) => id,
  );

  it('alarms on failed, timed-out, aborted, throttled and slow runs, dead letters, failed notifications, trigger errors, throttles and the credit budget', () => {
    expect(notifying.map(([, alarm]) => alarm.Properties.MetricName ?? 'composite').sort()).toEqual([
      'ApproximateNumberOfMessagesVisible', // the trigger's dead letters
      'ApproximateNumberOfMessagesVisible', // the run notifications' dead letters
      'CreditBudgetUsed',
      'Errors',
      'ExecutionThrottled',
      'ExecutionTime',
      'ExecutionsAborted',
      'ExecutionsFailed',
      'ExecutionsTimedOut',
      'FailedInvocations',
      'composite',
    ]);
    for (const [id, alarm] of notifying) {
      const metric = alarm.Properties.MetricName;
      // The composite; the slow-run and credit budget tests.
      if (metric === undefined || metric === 'ExecutionTime' || metric === 'CreditBudgetUsed') continue;
      expect(alarm.Properties, id).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('alarms when trainings took 80% of the credit budget, as the last credit taken left it', () => {
    const [budget] = notifying.filter(([, alarm]) => alarm.Properties.MetricName === 'CreditBudgetUsed');
    expect(budget?.[1].Properties).toMatchObject({
      Namespace: 'Hopper',
      Dimensions: [{ Name: 'service', Value: 'hopper' }],
      Statistic: 'Maximum',
      Threshold: 80,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('tells the functions that take and give back credits the budget from context, and no other', () => {
    const { template } = synthesize({ creditBudget: '20', creditBudget30Days: 400 });
    for (const name of TASK_NAMES) {
      const { resource } = functionNamed(template, name);
      const variables = (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      const budget = { HOPPER_CREDIT_BUDGET: '20', HOPPER_CREDIT_BUDGET_30_DAYS: '400' };
      if (name === 'StartTraining' || name === 'PollModel') expect(variables, name).toMatchObject(budget);
      else expect(variables, name).not.toHaveProperty('HOPPER_CREDIT_BUDGET');
    }
  });

  it('notifies the topic when an alarm fires and when it recovers, for every alarm but the throttle inputs', () => {
    expect(notifying.length).toBe(11);
    for (const [id, alarm] of notifying) {
      expect(alarm.Properties.AlarmActions, id).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions, id).toEqual([{ Ref: topicId }]);
    }
    // The rest are the per-function throttle alarms the composite LambdaThrottles alarm combines.
    const silent = alarms.filter(([, alarm]) => alarm.Properties.AlarmActions === undefined);
    expect(silent.length).toBe(TASK_NAMES.length + 1);
    for (const [id, alarm] of silent) {
      expect(alarm.Properties.MetricName, id).toBe('Throttles');
      expect(alarm.Properties.OKActions, id).toBeUndefined();
    }
    const [[, composite]] = composites as [[string, CfnResource]];
    const rule = JSON.stringify(composite.Properties.AlarmRule);
    for (const [id] of silent) expect(rule).toContain(`"Fn::GetAtt":["${id}","Arn"]`);
  });

  it('watches every function of the pipeline for throttles, one input alarm each', () => {
    const functionIds = resourcesOfType(defaults.template, 'AWS::Lambda::Function').map(([id]) => id);
    const throttled = alarms
      .filter(([, alarm]) => alarm.Properties.MetricName === 'Throttles')
      .map(([, alarm]) => {
        expect(alarm.Properties).toMatchObject({ Namespace: 'AWS/Lambda', Statistic: 'Sum', Threshold: 1 });
        const [dimension] = alarm.Properties.Dimensions as { Name: string; Value: { Ref: string } }[];
        expect(dimension!.Name).toBe('FunctionName');
        return dimension!.Value.Ref;
      });
    expect(throttled.sort()).toEqual(functionIds.sort());
    expect(functionIds).toHaveLength(TASK_NAMES.length + 1);
  });

  it('alarms when Step Functions throttles the runs', () => {
    const throttled = notifying.filter(([, alarm]) => alarm.Properties.MetricName === 'ExecutionThrottled');
    expect(throttled.map(([, alarm]) => alarm.Properties)).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/States',
        Statistic: 'Sum',
        Dimensions: [{ Name: 'StateMachineArn', Value: { Ref: machineId } }],
      }),
    ]);
  });

  it('alarms when a run notification could not be delivered: failed for good, or kept in its dead-letter queue', () => {
    const { runNotificationRule: rule, runNotificationDeadLetterQueue: deadLetterQueue } =
      defaults.stack.hopper;
    const [ruleId, queueId] = [rule, deadLetterQueue].map((construct) =>
      String(defaults.stack.resolve(defaults.stack.getLogicalId(construct.node.defaultChild as CfnElement))),
    );
    const byMetric = (name: string) =>
      notifying
        .filter(([, alarm]) => alarm.Properties.MetricName === name)
        .map(([, alarm]) => alarm.Properties);
    expect(byMetric('FailedInvocations')).toEqual([
      expect.objectContaining({
        Namespace: 'AWS/Events',
        Statistic: 'Sum',
        Dimensions: [{ Name: 'RuleName', Value: { Ref: ruleId } }],
      }),
    ]);
    expect(byMetric('ApproximateNumberOfMessagesVisible')).toContainEqual(
      expect.objectContaining({
        Statistic: 'Maximum',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      }),
    );
    defaults.template.hasOutput('RunNotificationDeadLetterQueueUrl', { Value: { Ref: queueId } });
  });

  it('calls a run slow when it took longer than half its wait budget', () => {
    const [[, slow]] = notifying.filter(([, alarm]) => alarm.Properties.MetricName === 'ExecutionTime') as [
      [string, CfnResource],
    ];
    expect(slow.Properties).toMatchObject({
      Namespace: 'AWS/States',
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: SLOW_RUN_SECONDS * 1000,
      Dimensions: [{ Name: 'StateMachineArn', Value: { Ref: machineId } }],
    });
    expect(SLOW_RUN_SECONDS).toBe(48 * 3600);
    expect(SLOW_RUN_SECONDS).toBeLessThan(MAX_WAIT_SECONDS);
    expect(slow.Properties.AlarmDescription).toContain('48 h');
  });

  it('lets CloudWatch alarms of this account publish to the topic and use its key', () => {
    const fromOwnAlarms = {
      StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      ArnLike: { 'aws:SourceArn': Match.anyValue() },
    };
    const sourceArns: string[] = [];
    defaults.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: { Ref: topicId },
            Condition: fromOwnAlarms,
          }),
        ]),
      },
    });
    const [topicPolicy] = resourcesOfType(defaults.template, 'AWS::SNS::TopicPolicy')
      .map(([, policy]) => policy)
      .filter((policy) => JSON.stringify(policy.Properties.Topics) === JSON.stringify([{ Ref: topicId }]));
    const [topic] = resourcesOfType(defaults.template, 'AWS::SNS::Topic')
      .filter(([id]) => id === topicId)
      .map(([, resource]) => resource);
    const keyId = (topic!.Properties.KmsMasterKeyId as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const key = defaults.template.findResources('AWS::KMS::Key')[keyId] as CfnResource;
    expect((key.Properties.KeyPolicy as { Statement: unknown[] }).Statement).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Condition: {
          StringEquals: fromOwnAlarms.StringEquals,
          ArnLike: { 'aws:SourceArn': expect.anything() as unknown },
        },
      }),
    );
    // Both allow the alarms of this account and region only.
    for (const document of [topicPolicy!.Properties.PolicyDocument, key.Properties.KeyPolicy]) {
      for (const statement of (document as { Statement: Statement[] }).Statement) {
        const arn = statement.Condition?.ArnLike?.['aws:SourceArn'];
        if (arn !== undefined) sourceArns.push(evaluated(arn));
      }
    }
    expect(sourceArns).toEqual([
      'arn:aws:cloudwatch:eu-west-1:123456789012:alarm:*',
      'arn:aws:cloudwatch:eu-west-1:123456789012:alarm:*',
    ]);
  });

  it('sends alarms to a KMS-encrypted, TLS-only topic, e-mailed when notificationEmail is set', () => {
    defaults.template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    defaults.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    // Deleted with the stack (after KMS's pending window), like the topic it serves.
    defaults.template.hasResource('AWS::KMS::Key', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ PendingWindowInDays: 30 }),
    });
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

  it('names the dashboard for the stack and the region (dashboards are account-wide)', () => {
    defaults.template.hasResourceProperties('AWS::CloudWatch::Dashboard', {
      DashboardName: { 'Fn::Join': ['', ['Hopper-', { Ref: 'AWS::Region' }]] },
    });
  });
});

describe('settings from context', () => {
  it('takes the service URL as the ServiceUrl parameter (no default) when serviceUrl is not given', () => {
    defaults.template.hasParameter('ServiceUrl', {
      Type: 'String',
      AllowedPattern: '^https://[^\\s]+$',
      Default: Match.absent(),
      Description: Match.stringLikeRegexp('--parameters ServiceUrl=https://'),
    });
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
      /inboxRetentionDays configures a bucket Hopper creates/,
    ],
  ])('refuses %j', (context, message) => {
    expect(() => synthesize(context)).toThrow(message);
  });
});
