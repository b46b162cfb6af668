import { App, Stack, Validations } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Hopper } from 'hopper-cdk';

const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(app)); // optional: Hopper's own findings are acknowledged
const stack = new Stack(app, 'TeamStack');

const hopper = new Hopper(stack, 'Training', {
  serviceUrl: 'https://training.example.com',
  // Your bucket: Hopper turns on its EventBridge notifications and uses inbox/, status/, models/.
  bucket: Bucket.fromBucketName(stack, 'Drops', 'team-drops'),
  // Your topic, for alarms and run notifications: no topic or KMS key is created.
  alarmTopic: Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:team-ops'),
  // Your secret, encrypted with your own KMS key: the functions that read it may decrypt with it.
  apiKeySecret: Secret.fromSecretAttributes(stack, 'TrainingKey', {
    secretCompleteArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/training-key-AbCdEf',
    encryptionKey: Key.fromKeyArn(
      stack,
      'TeamKey',
      'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
    ),
  }),
  creditBudget: { perDay: 20 },
});

// Wire further: hopper.bucket, hopper.stateMachine, hopper.alarms, ... and rules on its run events.
hopper.onRunEvent('RunFailed', { eventPattern: { detailType: ['Hopper Run Failed'] } });
app.synth();
