/**
 * One Hopper Lambda: an entry file in lambdas/handlers/ bundled by esbuild as an ESM module, on the
 * newest Node.js runtime, ARM, X-Ray active, logging to its own log group with a retention, and
 * a role of its own that starts with nothing but writing to that log group.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lambdas/run/invocation/index.js';
import { acknowledgeWildcardResource } from '../nag.js';
import { handlerPath, type TaskSpec } from '../tasks.js';
import type { HopperPipelineProps } from './pipeline.js';

/** The newest Node.js runtime aws-cdk-lib offers (cdk-nag's AwsSolutions-L1 checks this). */
export const NODE_RUNTIME = Runtime.NODEJS_24_X;

/**
 * esbuild output is ESM; bundled CommonJS dependencies (undici among them) still call
 * `require` for Node built-ins, which an ES module lacks, so the banner provides one.
 */
export const CREATE_REQUIRE_BANNER =
  "import { createRequire as __hopperCreateRequire } from 'node:module'; const require = __hopperCreateRequire(import.meta.url);";

/** The packages a bundle leaves to the runtime: the AWS SDK v3 the Lambda Node.js runtime includes. */
export const EXTERNAL_AWS_SDK = '@aws-sdk/*';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node24',
  mainFields: ['module', 'main'],
  banner: CREATE_REQUIRE_BANNER,
  // The AWS SDK v3 comes with the Lambda Node.js runtime; bundled, the S3 client alone added
  // ~300 KB to every function. The runtime's SDK is newer than the features Hopper relies on
  // (docs/deploy.md#bundles); local mode and the tests run the lockfile's version.
  externalModules: [EXTERNAL_AWS_SDK],
  minify: true,
  // No source maps: with NODE_OPTIONS=--enable-source-maps a bundle took ~70 ms more CPU to load
  // and the first stack trace of a container ~0.7 s (the map parsed), measured on the synthesized
  // bundles; an error's code and message, not its minified frames, are what a run reports.
  sourceMap: false,
};

/** A function's entry file and Lambda settings (infra/tasks.ts), and its logs' (the pipeline's). */
export interface HopperFunctionProps
  extends
    Pick<TaskSpec, 'handlerFile' | 'description' | 'timeoutSeconds' | 'memoryMb'>,
    Pick<HopperPipelineProps, 'logRetention' | 'logLevel'> {
  /** Environment variables. @default - none */
  readonly environment?: Readonly<Record<string, string>>;
  /** Where Lambda sends asynchronous invocations that failed every attempt. @default - none */
  readonly deadLetterQueue?: IQueue;
  /** Lambda's own retries of a failed asynchronous invocation (0-2). @default - Lambda's default, 2 */
  readonly retryAttempts?: number;
}

export class HopperFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HopperFunctionProps) {
    super(scope, id);
    const description = `Hopper ${id}: ${props.description}`;
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.THREE_MONTHS,
    });
    // An own role instead of the default one, which would carry the AWSLambdaBasicExecutionRole
    // managed policy (logs on every log group); this one may write to its own log group only.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description,
    });
    this.logGroup.grantWrite(this.role);
    this.function = new NodejsFunction(this, 'Function', {
      entry: handlerPath(props.handlerFile),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
      runtime: NODE_RUNTIME,
      architecture: Architecture.ARM_64,
      tracing: Tracing.ACTIVE,
      description,
      timeout: Duration.seconds(props.timeoutSeconds),
      memorySize: props.memoryMb,
      role: this.role,
      logGroup: this.logGroup,
      // Powertools reads these: the log level, and the service and namespace its logs, metrics and
      // traces carry.
      environment: {
        POWERTOOLS_LOG_LEVEL: props.logLevel ?? 'INFO',
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...props.environment,
      },
      bundling: BUNDLING,
      deadLetterQueue: props.deadLetterQueue,
      retryAttempts: props.retryAttempts,
      // A deploy publishes a new version and keeps the old ones: an execution that started
      // before it still invokes them (docs/deploy.md#a-deploy-during-a-run).
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
    });
    acknowledgeWildcardResource(
      this.role,
      '*',
      'X-Ray tracing (Tracing.ACTIVE): xray:PutTraceSegments and xray:PutTelemetryRecords do not support ' +
        'resource-level permissions, so IAM requires Resource "*".',
    );
  }
}
