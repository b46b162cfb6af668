/**
 * One Hopper Lambda: a handler bundle built by `npm run build` (dist/handlers/<name>/index.mjs,
 * scripts/build.ts), on the newest Node.js runtime, ARM, X-Ray active, logging to its own log
 * group with a retention, and a role of its own that starts with nothing but writing to that log
 * group. The bundles ship inside the package, so a synth needs no esbuild, sources or lock file.
 */
import { existsSync } from 'node:fs';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lambdas/runtime/metric-names.js';
import { acknowledgeWildcardResource } from '../nag.js';
import { bundleFolder, type TaskSpec } from '../tasks.js';
import type { HopperPipelineProps } from './pipeline-props.js';

/** The newest Node.js runtime aws-cdk-lib offers (cdk-nag's AwsSolutions-L1 checks this). */
export const NODE_RUNTIME = lambda.Runtime.NODEJS_24_X;

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
  readonly function: lambda.Function;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HopperFunctionProps) {
    super(scope, id);
    const description = `Hopper ${id}: ${props.description}`;
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.THREE_MONTHS,
      // Kept past an update or a delete (the logs of what ran), not after a failed first create.
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    // An own role instead of the default one, which would carry the AWSLambdaBasicExecutionRole
    // managed policy (logs on every log group); this one may write to its own log group only.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description,
    });
    this.logGroup.grantWrite(this.role);
    this.function = new lambda.Function(this, 'Function', {
      code: lambda.Code.fromAsset(handlerBundle(props.handlerFile)),
      handler: 'index.handler',
      runtime: NODE_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      tracing: lambda.Tracing.ACTIVE,
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
      deadLetterQueue: props.deadLetterQueue,
      retryAttempts: props.retryAttempts,
      // A deploy publishes a new version and keeps the old ones: an execution that started
      // before it still invokes them (docs/deploy.md#a-deploy-during-a-run); a failed first create
      // has no execution to keep them for.
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE },
    });
    acknowledgeWildcardResource(
      this.role,
      '*',
      'X-Ray tracing (Tracing.ACTIVE): xray:PutTraceSegments and xray:PutTelemetryRecords do not support ' +
        'resource-level permissions, so IAM requires Resource "*".',
    );
  }
}

/** The folder of a built handler bundle; missing, a message that says how to build it. */
function handlerBundle(handlerFile: string): string {
  const folder = bundleFolder(handlerFile);
  if (!existsSync(`${folder}index.mjs`)) {
    throw new Error(
      `Hopper's handler bundle ${folder}index.mjs is missing: run npm run build in the repository`,
    );
  }
  return folder;
}
