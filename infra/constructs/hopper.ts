/**
 * Hopper in one construct, for a team's own stack: the drop bucket (or theirs), the API key
 * secret (or theirs), the pipeline, its run notifications and its monitoring (or their topic).
 * It checks its props first and names every problem in one error, and it sets on its own
 * resources every behaviour it relies on, so it synthesizes the same under CDK's defaults as
 * under this repository's feature flags.
 */
import { CfnOutput, Stack } from 'aws-cdk-lib';
import type { Alarm, AlarmBase, Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { Rule, type RuleProps } from 'aws-cdk-lib/aws-events';
import type { Function as LambdaFunction, IVersion } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { RemovalPolicy } from 'aws-cdk-lib';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { RUN_EVENT_TYPES } from '../../lambdas/records/events/index.js';
import { apiKeySecretName, hopperPathInStack, markAsHopper } from '../names.js';
import { acknowledgeRule } from '../nag.js';
import { HopperMonitoring } from './monitoring.js';
import { HopperNotifications } from './notifications.js';
import { HopperPipeline } from './pipeline.js';
import { HopperStorage } from './storage.js';
import { hopperPropsProblems, type HopperProps } from './hopper-props.js';

export type { HopperCreditBudget, HopperLogLevel, HopperProps } from './hopper-props.js';

/**
 * Hopper: drop a folder into the bucket's inbox/<drop>/ (train.json last) and get a trained model
 * back in models/<drop>/. Builds the pipeline (12 pre-bundled Lambda functions and the state
 * machine that drives the training service), EventBridge wiring for the bucket, run events and
 * notifications, alarms and a dashboard.
 *
 * A stack may hold several: in one that does, the names Hopper gives (secret, log group, dashboard)
 * carry its path in the stack. Each declares a stack output `hopper <command> --stack` finds it by
 * (`--hopper <path>` chooses one of several).
 *
 * @example
 * import { App, Stack } from 'aws-cdk-lib';
 * import { Bucket } from 'aws-cdk-lib/aws-s3';
 * import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
 * import { Topic } from 'aws-cdk-lib/aws-sns';
 * import { Hopper } from 'hopper-cdk';
 *
 * const app = new App();
 * const stack = new Stack(app, 'TeamStack');
 * new Hopper(stack, 'Training', {
 *   serviceUrl: 'https://training.example.com',
 *   bucket: Bucket.fromBucketName(stack, 'Drops', 'team-drops'),
 *   apiKeySecret: Secret.fromSecretNameV2(stack, 'Key', 'team/training-key'),
 *   // A topic of the region the stack is deployed to.
 *   alarmTopic: Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:team-ops'),
 *   creditBudget: { perDay: 20 },
 * });
 * app.synth();
 */
export class Hopper extends Construct {
  /** The bucket drops arrive in and models go to: the one given, or a new one. */
  readonly bucket: IBucket;
  /** The server access log bucket of a new bucket; undefined when a bucket was given. */
  readonly accessLogBucket?: IBucket;
  /** The secret the functions read the API key from: the one given, or a new one to fill in. */
  readonly apiKeySecret: ISecret;
  /** The state machine that runs each drop. */
  readonly stateMachine: StateMachine;
  /**
   * The Lambda of each Task state, by state name: ValidateDrop, CreateDataset, UploadFiles,
   * PollDataset, Structure, PickDecisions, LabelExamples, StartTraining, PollModel, CopyModel, Report.
   */
  readonly taskFunctions: Readonly<Record<string, LambdaFunction>>;
  /**
   * The published version of each Task's Lambda that the state machine invokes: a deploy
   * publishes new ones and leaves a running execution on the versions it started with.
   */
  readonly taskVersions: Readonly<Record<string, IVersion>>;
  /** The Lambda that starts an execution for each train.json. */
  readonly trigger: LambdaFunction;
  /** S3 events the trigger could not take, after every retry. */
  readonly deadLetterQueue: Queue;
  /** The alarms that notify the topic, by name (docs/deploy.md, "The alarms"). */
  readonly alarms: Readonly<Record<string, AlarmBase>>;
  /** One alarm per function, inputs of the LambdaThrottles composite alarm. */
  readonly throttleAlarms: readonly Alarm[];
  /**
   * The CloudWatch dashboard of the runs, alarms and functions: `<stack>-<region>`, or
   * `<stack>-<Hopper's path>-<region>` in a stack of several Hoppers; undefined with `dashboard: false`.
   */
  readonly dashboard?: Dashboard;
  /** Where alarms go: `alarmTopic`, or a new encrypted topic. */
  readonly alarmTopic: ITopic;
  /** Where a summary of every ended run goes: `alarmTopic`, or a new encrypted topic. */
  readonly runNotificationTopic: ITopic;
  /** The rule that sends a summary of every ended run to the run notification topic. */
  readonly runNotificationRule: Rule;
  /** Run notifications the topic could not take, after every retry. */
  readonly runNotificationDeadLetterQueue: Queue;
  /** The `source` of the run events on the default EventBridge bus. */
  readonly eventSource: string;
  /**
   * What the functions are given to find the secret: its full ARN, or its name for a secret
   * imported by name (whose ARN CloudFormation knows only without the random suffix).
   */
  readonly apiKeySecretId: string;
  /** The secret's name, without the suffix Secrets Manager adds to its ARN. */
  readonly apiKeySecretName: string;

  constructor(scope: Construct, id: string, props: HopperProps) {
    super(scope, id);
    markAsHopper(this);
    const problems = hopperPropsProblems(props);
    if (problems.length > 0) {
      throw new Error(
        `Hopper ${this.node.path}: invalid props:\n${problems.map((p) => `- ${p}`).join('\n')}`,
      );
    }
    const storage = new HopperStorage(this, 'Storage', props);
    this.bucket = storage.bucket;
    this.accessLogBucket = storage.accessLogBucket;
    // A new secret's name is the one given here: Secret.secretName would carry the ARN's random
    // suffix unless the app sets a feature flag (@aws-cdk/aws-secretsmanager:parseOwnedSecretName).
    this.apiKeySecretName = props.apiKeySecret?.secretName ?? apiKeySecretName(this);
    this.apiKeySecret = props.apiKeySecret ?? this.createApiKeySecret(this.apiKeySecretName);
    this.apiKeySecretId = this.apiKeySecret.secretFullArn ?? this.apiKeySecret.secretName;
    // The pipeline takes the props it shares with Hopper's (service, events, logs, budget) as given.
    const pipeline = new HopperPipeline(this, 'Pipeline', {
      ...props,
      bucket: this.bucket,
      apiKeySecret: this.apiKeySecret,
      apiKeySecretId: this.apiKeySecretId,
    });
    this.stateMachine = pipeline.stateMachine;
    this.taskFunctions = pipeline.taskFunctions;
    this.taskVersions = pipeline.taskVersions;
    this.trigger = pipeline.trigger;
    this.deadLetterQueue = pipeline.deadLetterQueue;
    this.eventSource = pipeline.eventSource;
    const notifications = new HopperNotifications(this, 'Notifications', {
      eventSource: this.eventSource,
      email: props.runNotificationEmail,
      topic: props.alarmTopic,
    });
    this.runNotificationTopic = notifications.topic;
    this.runNotificationRule = notifications.rule;
    this.runNotificationDeadLetterQueue = notifications.deadLetterQueue;
    const monitoring = new HopperMonitoring(this, 'Monitoring', {
      stateMachine: this.stateMachine,
      deadLetterQueue: this.deadLetterQueue,
      trigger: this.trigger,
      taskFunctions: this.taskFunctions,
      runNotifications: notifications,
      notificationEmail: props.notificationEmail,
      topic: props.alarmTopic,
      dashboard: props.dashboard,
      throttleAlarms: props.throttleAlarms,
    });
    this.alarmTopic = monitoring.topic;
    this.alarms = monitoring.alarms;
    this.throttleAlarms = monitoring.throttleAlarms;
    this.dashboard = monitoring.dashboard;
    this.addCliOutput(props.serviceUrl);
  }

  /**
   * One stack output per Hopper, which `hopper <command> --stack` finds it by (local/cli/target.ts):
   * a JSON object marked `"hopper": <its path in the stack>`, so a stack with several is read right.
   */
  private addCliOutput(serviceUrl: string): void {
    const stack = Stack.of(this);
    const path = hopperPathInStack(this);
    new CfnOutput(this, 'CliTarget', {
      description: `Hopper ${path}: what hopper --stack reads to find it (bucket, state machine, service, secret, dashboard, alarm topic)`,
      value: stack.toJsonString({
        hopper: path,
        bucket: this.bucket.bucketName,
        stateMachineArn: this.stateMachine.stateMachineArn,
        serviceUrl,
        apiKeySecret: this.apiKeySecretId,
        dashboard: this.dashboard?.dashboardName,
        alarmTopic: this.alarmTopic.topicArn,
      }),
    });
  }

  /**
   * A rule on the default bus for this Hopper's run events (Hopper Run Started, Succeeded, Failed,
   * Superseded; docs/operations.md, "Events"), all of them unless `options.eventPattern` narrows
   * them: `hopper.onRunEvent('Failed', { eventPattern: { detailType: ['Hopper Run Failed'] } })`.
   */
  onRunEvent(id: string, options: RuleProps = {}): Rule {
    return new Rule(this, id, {
      ...options,
      eventPattern: {
        detailType: Object.values(RUN_EVENT_TYPES),
        ...options.eventPattern,
        source: [this.eventSource],
      },
    });
  }

  /** A secret named `<stack>/training-service-api-key-<creation id>` (infra/names.ts), to fill in. */
  private createApiKeySecret(secretName: string): Secret {
    const secret = new Secret(this, 'ApiKey', {
      secretName,
      description:
        "Hopper: the training service's API key. Replace the generated value with the key, as plain text.",
      // The key the operator filled in outlives a delete, and a refactor that moves the secret to
      // another logical id (docs/deploy.md#what-a-failed-deploy-or-a-delete-leaves-behind).
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    acknowledgeRule(
      secret,
      'AwsSolutions-SMG4',
      'The API key is issued by the third-party training service, which offers no API to rotate ' +
        'it, so a rotation Lambda could not change it; the operator replaces the value by hand.',
    );
    return secret;
  }
}
