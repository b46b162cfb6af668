/**
 * The Hopper stack: storage, the API key secret, the pipeline and its monitoring. Environment
 * agnostic, so `cdk synth` needs no AWS account; what varies per deployment comes in as props
 * (infra/config.ts reads them from CDK context, docs/deploy.md lists them).
 */
import { CfnOutput, CfnParameter, Stack, type StackProps } from 'aws-cdk-lib';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { HopperSettings } from './config.js';
import { HopperMonitoring } from './constructs/monitoring.js';
import { HopperNotifications } from './constructs/notifications.js';
import { HopperPipeline } from './constructs/pipeline.js';
import { HopperStorage } from './constructs/storage.js';
import { apiKeySecretName as newApiKeySecretName } from './names.js';
import { acknowledgeRule } from './nag.js';

/** The settings of one deployment (infra/config.ts, where each is described) and the stack's own. */
export interface HopperStackProps extends StackProps, HopperSettings {}

/** A URL CloudFormation accepts as ServiceUrl: https, no white space. */
export const SERVICE_URL_PATTERN = '^https://[^\\s]+$';

export class HopperStack extends Stack {
  readonly storage: HopperStorage;
  readonly apiKeySecret: ISecret;
  readonly pipeline: HopperPipeline;
  readonly monitoring: HopperMonitoring;
  readonly notifications: HopperNotifications;

  constructor(scope: Construct, id: string, props: HopperStackProps = {}) {
    super(scope, id, { description: 'Hopper: drop a folder into S3, get a trained model back', ...props });
    // Settings that conflict (a new bucket's options with an existing bucket) are refused by
    // the constructs themselves (HopperStorage), whoever builds them.
    this.storage = new HopperStorage(this, 'Storage', {
      bucketName: props.bucketName,
      inboxRetentionDays: props.inboxRetentionDays,
    });
    const serviceUrl = props.serviceUrl ?? this.serviceUrlParameter();
    const apiKeySecretName = props.apiKeySecretName ?? newApiKeySecretName(this);
    const [apiKeySecret, apiKeySecretId] = this.createApiKeySecret(apiKeySecretName, props);
    this.apiKeySecret = apiKeySecret;
    this.pipeline = new HopperPipeline(this, 'Pipeline', {
      bucket: this.storage.bucket,
      apiKeySecret,
      apiKeySecretId,
      apiKeySecretKmsKeyArn: props.apiKeySecretKmsKeyArn,
      serviceUrl,
      eventSource: props.eventSource,
      logLevel: props.logLevel,
      creditBudget: { perDay: props.creditBudget, per30Days: props.creditBudget30Days },
    });
    this.notifications = new HopperNotifications(this, 'Notifications', {
      eventSource: this.pipeline.eventSource,
      email: props.runNotificationEmail,
    });
    this.monitoring = new HopperMonitoring(this, 'Monitoring', {
      stateMachine: this.pipeline.stateMachine,
      deadLetterQueue: this.pipeline.deadLetterQueue,
      trigger: this.pipeline.trigger,
      taskFunctions: this.pipeline.taskFunctions,
      runNotifications: this.notifications,
      notificationEmail: props.notificationEmail,
    });
    this.addOutputs(serviceUrl, apiKeySecretName);
  }

  private serviceUrlParameter(): string {
    return new CfnParameter(this, 'ServiceUrl', {
      type: 'String',
      description:
        "The training service's base URL (https, without /v1). Give it with cdk deploy --parameters ServiceUrl=https://..., or synthesize with -c serviceUrl=... instead",
      allowedPattern: SERVICE_URL_PATTERN,
      constraintDescription: 'an https:// URL',
    }).valueAsString;
  }

  /**
   * The existing secret given by name, or a new one; and what the handlers are given to find it:
   * the name of an existing one (CloudFormation knows its ARN only without the random suffix).
   */
  private createApiKeySecret(name: string, props: HopperStackProps): [ISecret, string] {
    if (props.apiKeySecretName !== undefined) return [Secret.fromSecretNameV2(this, 'ApiKey', name), name];
    const secret = new Secret(this, 'ApiKey', {
      secretName: name,
      description:
        "Hopper: the training service's API key. Replace the generated value with the key, as plain text.",
    });
    acknowledgeRule(
      secret,
      'AwsSolutions-SMG4',
      'The API key is issued by the third-party training service, which offers no API to rotate ' +
        'it, so a rotation Lambda could not change it; the operator replaces the value by hand.',
    );
    return [secret, secret.secretArn];
  }

  private addOutputs(serviceUrl: string, apiKeySecretName: string): void {
    const consoleUrl = `https://${this.region}.console.aws.amazon.com`;
    new CfnOutput(this, 'BucketName', {
      description: 'Drop folders into s3://<this bucket>/inbox/<drop>/ (train.json last)',
      value: this.storage.bucket.bucketName,
    });
    new CfnOutput(this, 'ApiKeySecretName', {
      description: "The secret to put the training service's API key in (plain text)",
      value: apiKeySecretName,
    });
    new CfnOutput(this, 'StateMachineArn', { value: this.pipeline.stateMachine.stateMachineArn });
    new CfnOutput(this, 'TrainingServiceUrl', {
      description: 'The training service the pipeline calls (read by hopper models --stack)',
      value: serviceUrl,
    });
    new CfnOutput(this, 'StateMachineConsoleUrl', {
      description: 'Every run, as a graph',
      value: `${consoleUrl}/states/home?region=${this.region}#/statemachines/view/${this.pipeline.stateMachine.stateMachineArn}`,
    });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
    new CfnOutput(this, 'RunNotificationTopicArn', {
      description: 'A summary of every run that ended (docs/operations.md, "Notifications")',
      value: this.notifications.topic.topicArn,
    });
    new CfnOutput(this, 'EventSource', {
      description: 'The source of Hopper\'s run events on the default bus (docs/operations.md, "Events")',
      value: this.pipeline.eventSource,
    });
    new CfnOutput(this, 'TriggerDeadLetterQueueUrl', { value: this.pipeline.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'RunNotificationDeadLetterQueueUrl', {
      value: this.notifications.deadLetterQueue.queueUrl,
    });
    new CfnOutput(this, 'DashboardUrl', {
      value: `${consoleUrl}/cloudwatch/home?region=${this.region}#dashboards:name=${this.monitoring.dashboard.dashboardName}`,
    });
  }
}
