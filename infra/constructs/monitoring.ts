/**
 * What an operator watches: alarms on runs that failed, timed out, were stopped or took much
 * longer than they should, on events the trigger could not take (dead-letter queue), on trigger
 * errors and on throttled Lambdas, all sent to one SNS topic (optionally e-mailed) when they fire
 * and when they recover, and a dashboard of the same beside Hopper's own metrics (hopperWidgets).
 * docs/deploy.md ("The alarms") says what each one means and what to do.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmRule,
  AlarmStatusWidget,
  ComparisonOperator,
  CompositeAlarm,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TreatMissingData,
  type AlarmBase,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IRule } from 'aws-cdk-lib/aws-events';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { encryptedTopic } from './encrypted-topic.js';
import {
  ERROR_CODE_DIMENSION,
  METRIC,
  METRICS_NAMESPACE,
  SERVICE_NAME,
  STEP_DIMENSION,
} from '../../lambdas/runtime/index.js';
import { dashboardName } from '../names.js';
import { SLOW_RUN_SECONDS, hoursAndMinutes } from '../run-limits.js';

export interface HopperMonitoringProps {
  readonly stateMachine: IStateMachine;
  readonly deadLetterQueue: IQueue;
  readonly trigger: IFunction;
  /** The Task functions by state name: graphed, and watched for throttles. @default - none */
  readonly taskFunctions?: Readonly<Record<string, IFunction>>;
  /** An e-mail address subscribed to the alarm topic (it must confirm). @default - no subscription */
  readonly notificationEmail?: string;
  /**
   * The topic the alarms notify, instead of a new one; it must let CloudWatch publish (and use its
   * key, if it has one). @default - a new topic with its own KMS key
   */
  readonly topic?: ITopic;
  /** The run notifications, watched for ones that could not be delivered. @default - not watched */
  readonly runNotifications?: { readonly rule: IRule; readonly deadLetterQueue: IQueue };
  /** A dashboard; `false` leaves it out. @default true */
  readonly dashboard?: boolean;
  /** The per-function throttle alarms and their composite; `false` leaves them out. @default true */
  readonly throttleAlarms?: boolean;
}

/** The period each alarm and graph looks at. */
const PERIOD = Duration.minutes(5);
const SUM = { period: PERIOD, statistic: 'Sum' } as const;
const MAXIMUM = { period: PERIOD, statistic: 'Maximum' } as const;
const P90 = { period: PERIOD, statistic: 'p90' } as const;

/** The AWS service that publishes alarm state changes to the topic. */
const CLOUDWATCH = 'cloudwatch.amazonaws.com';

const CREDIT_BUDGET =
  'Trainings took 80% or more of the credit budget (-c creditBudget, creditBudget30Days): once it is used ' +
  'up, runs stop with credit_budget before spending. hopper status shows the use; raise the budget, or ' +
  'let it free up. OK again after a period without a credit taken.';

export class HopperMonitoring extends Construct {
  /** Every alarm below notifies this topic when it fires and when it recovers. */
  readonly topic: ITopic;
  /** The alarms that notify, by name (a composite alarm watches the throttle alarms). */
  readonly alarms: Readonly<Record<string, AlarmBase>>;
  /**
   * One alarm per Lambda, inputs of the LambdaThrottles composite alarm and notifying nothing
   * themselves: an alarm can combine at most 10 metrics, and the pipeline has 12 functions.
   */
  readonly throttleAlarms: readonly Alarm[];
  /** Undefined when the props leave it out. */
  readonly dashboard?: Dashboard;

  constructor(scope: Construct, id: string, props: HopperMonitoringProps) {
    super(scope, id);
    this.topic = props.topic ?? this.createTopic(props.notificationEmail);
    const functions = { ...props.taskFunctions, Trigger: props.trigger };
    this.throttleAlarms =
      props.throttleAlarms === false
        ? []
        : Object.entries(functions).map(([name, fn]) =>
            this.anyInPeriod(`Throttles${name}`, [
              `Lambda throttled Hopper's ${name} function (an input of the LambdaThrottles alarm).`,
              fn.metricThrottles(SUM),
            ]),
          );
    const single = Object.entries(metricAlarms(props)).map(([name, spec]) => [
      name,
      this.notifying(this.anyInPeriod(name, spec)),
    ]);
    this.alarms = {
      ...(Object.fromEntries(single) as Record<string, Alarm>),
      ...(this.throttleAlarms.length === 0 ? {} : { LambdaThrottles: this.throttleComposite() }),
    };
    if (props.dashboard !== false) this.dashboard = this.createDashboard(props, functions);
  }

  private throttleComposite(): CompositeAlarm {
    return this.notifying(
      new CompositeAlarm(this, 'LambdaThrottles', {
        alarmDescription:
          "Lambda throttled one of Hopper's functions (the account's or region's concurrency is used " +
          'up). The steps retry throttled invocations with backoff; runs slow down, and a step still ' +
          'throttled after its retries fails its run.',
        alarmRule: AlarmRule.anyOf(...this.throttleAlarms),
      }),
    );
  }

  /**
   * Fires when the metric is `threshold` (1) or more in a period (`comparison`); a period without
   * one is OK again.
   */
  private anyInPeriod(
    name: string,
    [description, metric, threshold = 1, comparison = AT_LEAST]: AlarmSpec,
  ): Alarm {
    return new Alarm(this, name, {
      alarmDescription: description,
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: comparison,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
  }

  /** Notifies the topic when `alarm` fires and when it recovers. */
  private notifying<T extends AlarmBase>(alarm: T): T {
    const notify = new SnsAction(this.topic);
    alarm.addAlarmAction(notify);
    alarm.addOkAction(notify);
    return alarm;
  }

  /**
   * The alarm topic: encrypted with a customer managed key (CloudWatch cannot use the AWS managed
   * SNS key), TLS only, and open to CloudWatch alarms of this account and region: the policy
   * Topic writes for enforceSSL replaces SNS's default one, so the permission must be explicit.
   */
  private createTopic(notificationEmail: string | undefined): Topic {
    const stack = Stack.of(this);
    const fromOwnAlarms = {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: {
        'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:*`,
      },
    };
    const topic = encryptedTopic(this, {
      id: 'AlarmTopic',
      displayName: 'Hopper alarms',
      purpose: 'the alarm topic',
      publisher: CLOUDWATCH,
      keyActions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      topicSid: 'CloudWatchAlarmsPublish',
      keyConditions: fromOwnAlarms,
      publishConditions: fromOwnAlarms,
    });
    if (notificationEmail !== undefined) topic.addSubscription(new EmailSubscription(notificationEmail));
    return topic;
  }

  private createDashboard(
    props: HopperMonitoringProps,
    functions: Readonly<Record<string, IFunction>>,
  ): Dashboard {
    const dashboard = new Dashboard(this, 'Dashboard', { dashboardName: dashboardName(this) });
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms), width: 24 }),
      ...awsRunWidgets(props),
    );
    dashboard.addWidgets(...hopperWidgets());
    const tasks = Object.entries(props.taskFunctions ?? {});
    if (tasks.length > 0) {
      const errors = tasks.map(([label, fn]) => fn.metricErrors({ ...SUM, label }));
      const durations = tasks.map(([label, fn]) => fn.metricDuration({ ...P90, label }));
      const throttles = Object.entries(functions).map(([label, fn]) => fn.metricThrottles({ ...SUM, label }));
      dashboard.addWidgets(
        graph('Task errors', 8, errors),
        graph('Task duration (p90)', 8, durations),
        graph('Throttles', 8, throttles),
      );
    }
    return dashboard;
  }
}

/**
 * An alarm on one metric: what it means and what to do (its description, in every notification),
 * its metric, and when it fires (at 1 or more in a period unless it says otherwise).
 */
type AlarmSpec = readonly [description: string, metric: IMetric, threshold?: number, at?: ComparisonOperator];
const AT_LEAST = ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD;

/** The alarms on one metric each, by name. */
function metricAlarms(props: HopperMonitoringProps): Record<string, AlarmSpec> {
  const machine = props.stateMachine;
  return {
    ExecutionsFailed: [
      'A Hopper run failed. status/<drop>.json says why and what to do, unless the report step ' +
        'itself failed (the execution ended in ReportFailed): then the status file may be stale, and ' +
        "the execution's error in the Step Functions console says what happened.",
      machine.metricFailed(SUM),
    ],
    ExecutionsTimedOut: [
      "A Hopper run reached the state machine's execution timeout and Step Functions stopped it; the " +
        'report step never ran, so status/<drop>.json still says running.',
      machine.metricTimedOut(SUM),
    ],
    ExecutionsAborted: [
      'A Hopper run was stopped (StopExecution, from the console or the API); the report step never ' +
        'ran, so status/<drop>.json still says running.',
      machine.metricAborted(SUM),
    ],
    ExecutionsThrottled: [
      "Step Functions throttled Hopper's runs (the account's state transition quota is used up): the " +
        'runs slow down; find what else runs state machines in the account, or ask AWS for a higher quota.',
      machine.metricThrottled(SUM),
    ],
    TriggerDeadLetters: [
      `An S3 event could not start a run: see the messages in the trigger dead-letter queue. ${UNTIL_DRAINED}`,
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible(MAXIMUM),
    ],
    TriggerErrors: [
      'The trigger Lambda failed: a dropped train.json may not have started a run (see its logs).',
      props.trigger.metricErrors(SUM),
    ],
    ...(props.runNotifications === undefined ? {} : notificationAlarms(props.runNotifications)),
    SlowRuns: [
      `A Hopper run ended after more than ${hoursAndMinutes(SLOW_RUN_SECONDS)}, much longer than it should: ` +
        'see which step it spent its time in (the Step Functions console).',
      machine.metricTime(MAXIMUM),
      SLOW_RUN_SECONDS * 1000,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
    ],
    // The share in use a credit taken left; a label would make it a metric math alarm.
    CreditBudget: [CREDIT_BUDGET, hopper(METRIC.creditBudgetUsed, undefined, 'Maximum'), 80],
  };
}

const UNTIL_DRAINED = 'The alarm stays in ALARM until the queue is empty (delete the messages once handled).';

/** The run notifications' alarms: a notification that failed for good, or could not be delivered. */
function notificationAlarms(
  notifications: NonNullable<HopperMonitoringProps['runNotifications']>,
): Record<string, AlarmSpec> {
  return {
    RunNotificationsFailed: [
      "A run notification failed for good (the rule's FailedInvocations): check the topic's and its " +
        "key's policies. The run itself is not affected: its status file and event say how it ended.",
      new Metric({
        namespace: 'AWS/Events',
        metricName: 'FailedInvocations',
        dimensionsMap: { RuleName: notifications.rule.ruleName },
        ...SUM,
      }),
    ],
    RunNotificationDeadLetters: [
      'A run notification could not be delivered after a day of retries: see the messages in the ' +
        `run notification dead-letter queue (their attributes say why). ${UNTIL_DRAINED}`,
      notifications.deadLetterQueue.metricApproximateNumberOfMessagesVisible(MAXIMUM),
    ],
  };
}

/** One of Hopper's own metrics (lambdas/runtime/metrics.ts) over the period. */
const OF_HOPPER = { namespace: METRICS_NAMESPACE, dimensionsMap: { service: SERVICE_NAME }, period: PERIOD };
function hopper(metricName: string, label?: string, statistic = 'Sum'): Metric {
  return new Metric({ ...OF_HOPPER, metricName, statistic, label });
}

function graph(title: string, width: number, left: IMetric[], right?: IMetric[]): GraphWidget {
  return new GraphWidget({ title, width, left, right });
}

/** The runs and the trigger as AWS counts them (Step Functions, Lambda, SQS). */
function awsRunWidgets(props: HopperMonitoringProps): GraphWidget[] {
  const machine = props.stateMachine;
  const sum = (label: string) => ({ ...SUM, label });
  return [
    graph(
      'Runs',
      12,
      [
        machine.metricStarted(sum('started')),
        machine.metricSucceeded(sum('succeeded')),
        machine.metricFailed(sum('failed')),
        machine.metricTimedOut(sum('timed out')),
        machine.metricAborted(sum('aborted')),
      ],
      [machine.metricTime({ ...MAXIMUM, label: 'longest run (ms)' })],
    ),
    graph(
      'Trigger',
      12,
      [props.trigger.metricInvocations(sum('invocations')), props.trigger.metricErrors(sum('errors'))],
      [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ ...MAXIMUM, label: 'dead letters' })],
    ),
  ];
}

/**
 * The dashboard's row of Hopper's own metrics (lambdas/runtime/metrics.ts, namespace Hopper): what
 * the runs did and cost, beside the AWS metrics of the same runs. Metrics with a dimension whose
 * values are open (error codes, steps) are graphed with SEARCH, so a new one shows up by itself.
 */
export function hopperWidgets(): GraphWidget[] {
  const byDimension = (metricName: string, dimension: string, statistic: string) =>
    new MathExpression({
      expression: `SEARCH('{${METRICS_NAMESPACE},service,${dimension}} MetricName="${metricName}"', '${statistic}', ${PERIOD.toSeconds()})`,
      usingMetrics: {},
      label: '',
      period: PERIOD,
    });
  return [
    graph('Hopper runs (from the steps)', 8, [
      hopper(METRIC.runsStarted, 'started'),
      hopper(METRIC.runsSucceeded, 'succeeded'),
      hopper(METRIC.runsSuperseded, 'superseded'),
      hopper(METRIC.runsFailed, 'failed'),
    ]),
    graph('Failed runs by error code', 8, [byDimension(METRIC.runsFailed, ERROR_CODE_DIMENSION, 'Sum')]),
    graph(
      'Credits and estimated AWS cost (USD)',
      8,
      [
        hopper(METRIC.creditsSpent, 'credits spent'),
        hopper(METRIC.creditBudgetUsed, 'budget used (%)', 'Maximum'),
      ],
      [hopper(METRIC.runAwsCost, 'AWS cost of finished runs (USD)')],
    ),
    graph('Run duration (ms)', 8, [
      hopper(METRIC.runDuration, 'median', 'p50'),
      hopper(METRIC.runDuration, 'longest', 'Maximum'),
    ]),
    graph('Time per step (p90, ms)', 8, [byDimension(METRIC.stepDuration, STEP_DIMENSION, 'p90')]),
    graph(
      'Data moved',
      8,
      [hopper(METRIC.bytesUploaded, 'bytes uploaded'), hopper(METRIC.bytesCopied, 'bytes copied')],
      [hopper(METRIC.labelsAnswered, 'labels answered')],
    ),
  ];
}
