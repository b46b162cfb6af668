/**
 * The Hopper stack: storage, the API key secret, the pipeline and its monitoring. Environment
 * agnostic, so `cdk synth` needs no AWS account; what varies per deployment comes in as props
 * (infra/config.ts reads them from CDK context, docs/deploy.md lists them).
 */
import { ArnFormat, CfnOutput, CfnParameter, Stack } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { HopperStackProps } from './config.js';
import { Hopper } from './constructs/hopper.js';

export type { HopperStackProps } from './config.js';

/** A URL CloudFormation accepts as ServiceUrl: https, no white space. */
export const SERVICE_URL_PATTERN = '^https://[^\\s]+$';

/**
 * The repository's own app (`cdk deploy` in a clone): one `Hopper` construct, its settings from
 * context by name (an existing bucket or secret is imported here), and outputs for the operator.
 */
export class HopperStack extends Stack {
  readonly hopper: Hopper;

  constructor(scope: Construct, id: string, props: HopperStackProps = {}) {
    super(scope, id, { description: 'Hopper: drop a folder into S3, get a trained model back', ...props });
    const serviceUrl = props.serviceUrl ?? this.serviceUrlParameter();
    // The settings Hopper takes as they are (retention, event source, log level, e-mails) pass through.
    this.hopper = new Hopper(this, 'Hopper', {
      ...props,
      serviceUrl,
      bucket:
        props.bucketName === undefined ? undefined : Bucket.fromBucketName(this, 'Drops', props.bucketName),
      apiKeySecret: this.existingSecret(props),
      creditBudget:
        props.creditBudget === undefined && props.creditBudget30Days === undefined
          ? undefined
          : { perDay: props.creditBudget, per30Days: props.creditBudget30Days },
    });
    this.addOutputs(serviceUrl);
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

  /** The secret given by name (with its own KMS key, if any), or undefined for a new one. */
  private existingSecret(props: HopperStackProps): ISecret | undefined {
    const name = props.apiKeySecretName;
    if (name === undefined) return undefined;
    if (props.apiKeySecretKmsKeyArn === undefined) return Secret.fromSecretNameV2(this, 'ApiKey', name);
    return Secret.fromSecretAttributes(this, 'ApiKey', {
      secretPartialArn: this.formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: name,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
      encryptionKey: Key.fromKeyArn(this, 'ApiKeyKey', props.apiKeySecretKmsKeyArn),
    });
  }

  private addOutputs(serviceUrl: string): void {
    const { hopper } = this;
    const consoleUrl = `https://${this.region}.console.aws.amazon.com`;
    const stateMachineArn = hopper.stateMachine.stateMachineArn;
    const outputs: Record<string, [value: string, description?: string]> = {
      BucketName: [
        hopper.bucket.bucketName,
        'Drop folders into s3://<this bucket>/inbox/<drop>/ (train.json last)',
      ],
      ApiKeySecretName: [
        hopper.apiKeySecretName,
        "The secret to put the training service's API key in (plain text)",
      ],
      StateMachineArn: [stateMachineArn],
      TrainingServiceUrl: [
        serviceUrl,
        'The training service the pipeline calls (read by hopper models --stack)',
      ],
      StateMachineConsoleUrl: [
        `${consoleUrl}/states/home?region=${this.region}#/statemachines/view/${stateMachineArn}`,
        'Every run, as a graph',
      ],
      AlarmTopicArn: [hopper.alarmTopic.topicArn],
      RunNotificationTopicArn: [
        hopper.runNotificationTopic.topicArn,
        'A summary of every run that ended (docs/operations.md, "Notifications")',
      ],
      EventSource: [
        hopper.eventSource,
        'The source of Hopper\'s run events on the default bus (docs/operations.md, "Events")',
      ],
      TriggerDeadLetterQueueUrl: [hopper.deadLetterQueue.queueUrl],
      RunNotificationDeadLetterQueueUrl: [hopper.runNotificationDeadLetterQueue.queueUrl],
      ...(hopper.dashboard === undefined
        ? {}
        : {
            DashboardUrl: [
              `${consoleUrl}/cloudwatch/home?region=${this.region}#dashboards:name=${hopper.dashboard.dashboardName}`,
            ] as [string],
          }),
    };
    for (const [id, [value, description]] of Object.entries(outputs))
      new CfnOutput(this, id, { value, description });
  }
}
