// The same team app as an ES module project ("type": "module"), in plain JavaScript.
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Hopper } from 'hopper-cdk';

const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
const stack = new Stack(app, 'TeamStack');
new Hopper(stack, 'Training', {
  serviceUrl: 'https://training.example.com',
  bucket: Bucket.fromBucketName(stack, 'Drops', 'team-drops'),
  alarmTopic: Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:team-ops'),
  apiKeySecret: Secret.fromSecretNameV2(stack, 'Key', 'team/training-key'),
});
app.synth();
