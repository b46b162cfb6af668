// A team's own CDK app as `cdk init app --language typescript` makes one (CommonJS, strict, module
// NodeNext), with Hopper over its own bucket, topic and secret (encrypted with its own KMS key),
// and cdk-nag's AwsSolutions checks on the whole app. test/packages.test.ts type-checks it with
// tsc, runs it, and reads the template it writes.
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Hopper, type HopperProps } from 'hopper-cdk';

const app = new App({ outdir: process.argv[2] });
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
const stack = new Stack(app, 'TeamStack', { env: { account: '123456789012', region: 'eu-west-1' } });
const props: HopperProps = {
  serviceUrl: 'https://training.example.com',
  bucket: Bucket.fromBucketName(stack, 'Drops', 'team-drops'),
  alarmTopic: Topic.fromTopicArn(stack, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:team-ops'),
  apiKeySecret: Secret.fromSecretAttributes(stack, 'Key', {
    secretCompleteArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/training-key-AbCdEf',
    encryptionKey: Key.fromKeyArn(stack, 'TeamKey', 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab'),
  }),
  creditBudget: { perDay: 20 },
};
const hopper = new Hopper(stack, 'Training', props);
hopper.onRunEvent('Failed', { eventPattern: { detailType: ['Hopper Run Failed'] } });
// Public properties a team wires further, typed.
const wired: string[] = [hopper.bucket.bucketName, hopper.stateMachine.stateMachineArn, hopper.deadLetterQueue.queueArn];
void wired;
app.synth();
