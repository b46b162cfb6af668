/**
 * The pipeline: one Lambda per Task state (infra/tasks.ts), the state machine that drives them
 * (infra/state-machine.ts), and the way in: an EventBridge rule for `inbox/*\/train.json`
 * "Object Created" events invoking the trigger Lambda, which starts one execution per
 * train.json object. Deliveries that fail every retry land in a dead-letter queue.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Match, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { DEFAULT_EVENT_SOURCE } from '../../lambdas/records/events/index.js';
import { ENV } from '../../lambdas/runtime/index.js';
import { TRAIN_JSON_KEY_WILDCARD } from '../../lambdas/storage/keys.js';
import { executionLogGroupName } from '../names.js';
import { acknowledgeWildcardResource } from '../nag.js';
import { grantDescribeExecutions, grantTaskAccess } from '../permissions.js';
import { EXECUTION_TIMEOUT_SECONDS } from '../run-limits.js';
import { buildDefinition } from '../state-machine.js';
import { TASKS, TRIGGER, type TaskName } from '../tasks.js';
import { EVENT_DELIVERY_RETRY, deadLetterQueue } from './dead-letter-queue.js';
import { HopperFunction, type HopperFunctionProps } from './hopper-function.js';
import type { HopperPipelineProps } from './pipeline-props.js';

export type { HopperPipelineProps } from './pipeline-props.js';

export class HopperPipeline extends Construct {
  readonly stateMachine: StateMachine;
  /** The `source` of the run events the pipeline puts on the default bus. */
  readonly eventSource: string;
  /** The state machine's log group, `/aws/vendedlogs/states/<stack>-<creation id>` (infra/names.ts). */
  readonly executionLogs: LogGroup;
  /** The Lambda of each Task state, by state name. */
  readonly taskFunctions: Readonly<Record<TaskName, lambda.Function>>;
  /**
   * The published version of each Task's Lambda that the state machine invokes: a deploy
   * publishes new ones and leaves a running execution on the versions it started with
   * (docs/deploy.md#a-deploy-during-a-run).
   */
  readonly taskVersions: Readonly<Record<TaskName, lambda.IVersion>>;
  readonly trigger: lambda.Function;
  readonly rule: Rule;
  /** Events the trigger could not take: failed deliveries and failed asynchronous invocations. */
  readonly deadLetterQueue: Queue;
  /** What every function of the pipeline shares. */
  private readonly functionSettings: Pick<HopperFunctionProps, 'logRetention' | 'logLevel'>;

  constructor(scope: Construct, id: string, props: HopperPipelineProps) {
    super(scope, id);
    const logRetention = props.logRetention ?? RetentionDays.THREE_MONTHS;
    this.functionSettings = { logRetention, logLevel: props.logLevel };
    this.eventSource = props.eventSource ?? DEFAULT_EVENT_SOURCE;
    [this.taskFunctions, this.taskVersions] = this.createTasks(props);
    this.executionLogs = new LogGroup(this, 'ExecutionLogs', {
      logGroupName: executionLogGroupName(this),
      retention: logRetention,
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    this.stateMachine = this.createStateMachine();
    this.deadLetterQueue = deadLetterQueue(this, 'TriggerDeadLetters');
    this.trigger = this.createTrigger(props);
    this.rule = this.createRule(props);
  }

  /** One function per Task, with its access (infra/tasks.ts), and the version the state machine invokes. */
  private createTasks(
    props: HopperPipelineProps,
  ): [Record<TaskName, lambda.Function>, Record<TaskName, lambda.IVersion>] {
    // Each function is told what its access lets it use: the service and its key, the event
    // source, the credit budget.
    const service = {
      [ENV.serviceUrl]: props.serviceUrl,
      [ENV.apiKeySecret]: props.apiKeySecretId ?? props.apiKeySecret.secretArn,
    };
    const { perDay, per30Days } = props.creditBudget ?? {};
    const budget = {
      ...(perDay === undefined ? {} : { [ENV.creditBudget]: String(perDay) }),
      ...(per30Days === undefined ? {} : { [ENV.creditBudget30Days]: String(per30Days) }),
    };
    const functions = {} as Record<TaskName, lambda.Function>;
    const versions = {} as Record<TaskName, lambda.IVersion>;
    for (const spec of TASKS) {
      const environment = {
        ...(spec.access.apiKey ? service : {}),
        ...(spec.access.events === true ? { [ENV.eventSource]: this.eventSource } : {}),
        ...(spec.access.credits === true ? budget : {}),
      };
      const task = new HopperFunction(this, spec.name, { ...spec, ...this.functionSettings, environment });
      grantTaskAccess(task.role, spec.access, { ...props, eventSource: this.eventSource });
      functions[spec.name] = task.function;
      versions[spec.name] = task.function.currentVersion;
    }
    return [functions, versions];
  }

  private createStateMachine(): StateMachine {
    const stateMachine = new StateMachine(this, 'StateMachine', {
      comment: 'Hopper: one execution per train.json dropped into inbox/<drop>/',
      definitionBody: DefinitionBody.fromChainable(buildDefinition(this, this.taskVersions)),
      stateMachineType: StateMachineType.STANDARD,
      timeout: Duration.seconds(EXECUTION_TIMEOUT_SECONDS),
      tracingEnabled: true,
      // States hold ids and counters only (never the API key), so execution data may be logged.
      logs: { destination: this.executionLogs, level: LogLevel.ALL, includeExecutionData: true },
    });
    // LambdaInvoke grants the current version only; an execution that started before a deploy
    // still invokes the versions of its own definition, so the role may invoke every version.
    for (const fn of Object.values(this.taskFunctions)) fn.grantInvoke(stateMachine);
    acknowledgeStateMachineWildcards(stateMachine, this.taskFunctions);
    const askers = TASKS.filter((spec) => spec.access.executions === true);
    const roles = askers.flatMap((spec) => this.taskFunctions[spec.name].role ?? []);
    grantDescribeExecutions(this, 'DescribeExecutions', stateMachine, roles);
    return stateMachine;
  }

  private createTrigger(props: HopperPipelineProps): lambda.Function {
    const trigger = new HopperFunction(this, 'Trigger', {
      ...TRIGGER,
      ...this.functionSettings,
      environment: { [ENV.stateMachineArn]: this.stateMachine.stateMachineArn },
      deadLetterQueue: this.deadLetterQueue,
      retryAttempts: 2,
    });
    this.stateMachine.grantStartExecution(trigger.function);
    grantTaskAccess(trigger.role, TRIGGER.access, { ...props, eventSource: this.eventSource });
    return trigger.function;
  }

  private createRule(props: HopperPipelineProps): Rule {
    return new Rule(this, 'TrainJsonCreated', {
      description: 'Hopper: a train.json written to inbox/<drop>/ starts a run',
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: {
          bucket: { name: [props.bucket.bucketName] },
          object: { key: Match.wildcard(TRAIN_JSON_KEY_WILDCARD) },
        },
      },
      targets: [
        new LambdaFunction(this.trigger, { deadLetterQueue: this.deadLetterQueue, ...EVENT_DELIVERY_RETRY }),
      ],
    });
  }
}

function acknowledgeStateMachineWildcards(
  stateMachine: StateMachine,
  functions: Readonly<Record<TaskName, lambda.Function>>,
): void {
  const role = stateMachine.role;
  acknowledgeWildcardResource(
    role,
    '*',
    'Logging to CloudWatch Logs (logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, ' +
      'DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, ' +
      'DescribeLogGroups) and X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, ' +
      'GetSamplingRules, GetSamplingTargets) support no resource-level permissions; IAM requires "*".',
  );
  for (const fn of Object.values(functions)) {
    acknowledgeWildcardResource(
      role,
      `${fn.functionArn}:*`,
      "Invoking every published version of the pipeline's own function (<function ARN>:*), so an " +
        'execution started before a deploy keeps calling its versions; no other function is included.',
    );
  }
}
