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
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
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
} from '../../lambdas/run/metric-names.js';
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
  /** The period each alarm looks at. @default Duration.minutes(5) */
  readonly period?: Duration;
  /**
   * A run that took longer than this fires the SlowRuns alarm.
   * @default Duration.seconds(SLOW_RUN_SECONDS), half a run's wait budget (infra/run-limits.ts)
   */
  readonly slowRunThreshold?: Duration;
  /** Whether to create the dashboard. @default true */
  readonly dashboard?: boolean;
}

/** The AWS service that publishes alarm state changes to the topic. */
const CLOUDWATCH = 'cloudwatch.amazonaws.com';

export class HopperMonitoring extends Construct {
  /** Every alarm below notifies this topic when it fires and when it recovers. */
  readonly topic: Topic;
  /** The alarms that notify, by name (a composite alarm watches the throttle alarms). */
  readonly alarms: Readonly<Record<string, AlarmBase>>;
  /**
   * One alarm per Lambda, inputs of the LambdaThrottles composite alarm and notifying nothing
   * themselves: an alarm can combine at most 10 metrics, and the pipeline has 12 functions.
   */
  readonly throttleAlarms: readonly Alarm[];
  readonly dashboard?: Dashboard;

  constructor(scope: Construct, id: string, props: HopperMonitoringProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);
    this.topic = this.createTopic(props.notificationEmail);
    const notify = new SnsAction(this.topic);
    const notifying = <T extends AlarmBase>(alarm: T): T => {
      alarm.addAlarmAction(notify);
      alarm.addOkAction(notify);
      return alarm;
    };
    // Fires when the metric is 1 or more in a period; a period without one is OK again.
    const anyInPeriod = (name: string, description: string, metric: IMetric): Alarm =>
      new Alarm(this, name, {
        alarmDescription: description,
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
    const atLeastOnce = (name: string, description: string, metric: IMetric): Alarm =>
      notifying(anyInPeriod(name, description, metric));

    const machine = props.stateMachine;
    const slowRun = props.slowRunThreshold ?? Duration.seconds(SLOW_RUN_SECONDS);
    const functions = { ...props.taskFunctions, Trigger: props.trigger };
    this.throttleAlarms = Object.entries(functions).map(([name, fn]) =>
      anyInPeriod(
        `Throttles${name}`,
        `Lambda throttled Hopper's ${name} function (an input of the LambdaThrottles alarm).`,
        fn.metricThrottles({ period, statistic: 'Sum' }),
      ),
    );

    this.alarms = {
      ExecutionsFailed: atLeastOnce(
        'ExecutionsFailed',
        'A Hopper run failed. status/<drop>.json says why and what to do, unless the report step ' +
          'itself failed (the execution ended in ReportFailed): then the status file may be stale, and ' +
          "the execution's error in the Step Functions console says what happened.",
        machine.metricFailed({ period, statistic: 'Sum' }),
      ),
      ExecutionsTimedOut: atLeastOnce(
        'ExecutionsTimedOut',
        "A Hopper run reached the state machine's execution timeout and Step Functions stopped it; the " +
          'report step never ran, so status/<drop>.json still says running.',
        machine.metricTimedOut({ period, statistic: 'Sum' }),
      ),
      ExecutionsAborted: atLeastOnce(
        'ExecutionsAborted',
        'A Hopper run was stopped (StopExecution, from the console or the API); the report step never ' +
          'ran, so status/<drop>.json still says running.',
        machine.metricAborted({ period, statistic: 'Sum' }),
      ),
      SlowRuns: notifying(
        new Alarm(this, 'SlowRuns', {
          alarmDescription:
            `A Hopper run ended after more than ${hoursAndMinutes(slowRun.toSeconds())}, much longer than it should: ` +
            'see which step it spent its time in (the Step Functions console).',
          metric: machine.metricTime({ period, statistic: 'Maximum' }),
          threshold: slowRun.toMilliseconds(),
          evaluationPeriods: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      ),
      TriggerDeadLetters: atLeastOnce(
        'TriggerDeadLetters',
        'An S3 event could not start a run: see the messages in the trigger dead-letter queue.',
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      ),
      TriggerErrors: atLeastOnce(
        'TriggerErrors',
        'The trigger Lambda failed: a dropped train.json may not have started a run (see its logs).',
        props.trigger.metricErrors({ period, statistic: 'Sum' }),
      ),
      LambdaThrottles: notifying(
        new CompositeAlarm(this, 'LambdaThrottles', {
          alarmDescription:
            "Lambda throttled one of Hopper's functions (the account's or region's concurrency is used " +
            'up). The steps retry throttled invocations with backoff; runs slow down, and a step still ' +
            'throttled after its retries fails its run.',
          alarmRule: AlarmRule.anyOf(...this.throttleAlarms),
        }),
      ),
    };

    if (props.dashboard ?? true) {
      this.dashboard = this.createDashboard(props, functions, period);
    }
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
      keySid: 'CloudWatchAlarmsPublishToTopic',
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
    period: Duration,
  ): Dashboard {
    const machine = props.stateMachine;
    const dashboard = new Dashboard(this, 'Dashboard', { dashboardName: dashboardName(this) });
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms), width: 24 }),
      new GraphWidget({
        title: 'Runs',
        width: 12,
        left: [
          machine.metricStarted({ period, statistic: 'Sum', label: 'started' }),
          machine.metricSucceeded({ period, statistic: 'Sum', label: 'succeeded' }),
          machine.metricFailed({ period, statistic: 'Sum', label: 'failed' }),
          machine.metricTimedOut({ period, statistic: 'Sum', label: 'timed out' }),
          machine.metricAborted({ period, statistic: 'Sum', label: 'aborted' }),
        ],
        right: [machine.metricTime({ period, statistic: 'Maximum', label: 'longest run (ms)' })],
      }),
      new GraphWidget({
        title: 'Trigger',
        width: 12,
        left: [
          props.trigger.metricInvocations({ period, statistic: 'Sum', label: 'invocations' }),
          props.trigger.metricErrors({ period, statistic: 'Sum', label: 'errors' }),
        ],
        right: [
          props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: 'Maximum',
            label: 'dead letters',
          }),
        ],
      }),
    );
    dashboard.addWidgets(...hopperWidgets(period));
    const tasks = Object.entries(props.taskFunctions ?? {});
    if (tasks.length > 0) {
      dashboard.addWidgets(
        new GraphWidget({
          title: 'Task errors',
          width: 8,
          left: tasks.map(([name, fn]) => fn.metricErrors({ period, statistic: 'Sum', label: name })),
        }),
        new GraphWidget({
          title: 'Task duration (p90)',
          width: 8,
          left: tasks.map(([name, fn]) => fn.metricDuration({ period, statistic: 'p90', label: name })),
        }),
        new GraphWidget({
          title: 'Throttles',
          width: 8,
          left: Object.entries(functions).map(([name, fn]) =>
            fn.metricThrottles({ period, statistic: 'Sum', label: name }),
          ),
        }),
      );
    }
    return dashboard;
  }
}

/**
 * The dashboard's row of Hopper's own metrics (lambdas/run/metrics.ts, namespace Hopper): what
 * the runs did and cost, beside the AWS metrics of the same runs. Metrics with a dimension whose
 * values are open (error codes, steps) are graphed with SEARCH, so a new one shows up by itself.
 */
export function hopperWidgets(period: Duration): GraphWidget[] {
  const hopper = (metricName: string, statistic: string, label: string): Metric =>
    new Metric({
      namespace: METRICS_NAMESPACE,
      metricName,
      dimensionsMap: { service: SERVICE_NAME },
      period,
      statistic,
      label,
    });
  const byDimension = (metricName: string, dimension: string, statistic: string, label: string) =>
    new MathExpression({
      expression: `SEARCH('{${METRICS_NAMESPACE},service,${dimension}} MetricName="${metricName}"', '${statistic}', ${period.toSeconds()})`,
      usingMetrics: {},
      label,
      period,
    });
  return [
    new GraphWidget({
      title: 'Hopper runs (from the steps)',
      width: 8,
      left: [
        hopper(METRIC.runsStarted, 'Sum', 'started'),
        hopper(METRIC.runsSucceeded, 'Sum', 'succeeded'),
        hopper(METRIC.runsFailed, 'Sum', 'failed'),
      ],
    }),
    new GraphWidget({
      title: 'Failed runs by error code',
      width: 8,
      left: [byDimension(METRIC.runsFailed, ERROR_CODE_DIMENSION, 'Sum', '')],
    }),
    new GraphWidget({
      title: 'Credits and estimated AWS cost (USD)',
      width: 8,
      left: [hopper(METRIC.creditsSpent, 'Sum', 'credits spent')],
      right: [hopper(METRIC.runAwsCost, 'Sum', 'AWS cost of finished runs (USD)')],
    }),
    new GraphWidget({
      title: 'Run duration (ms)',
      width: 8,
      left: [hopper(METRIC.runDuration, 'p50', 'median'), hopper(METRIC.runDuration, 'Maximum', 'longest')],
    }),
    new GraphWidget({
      title: 'Time per step (p90, ms)',
      width: 8,
      left: [byDimension(METRIC.stepDuration, STEP_DIMENSION, 'p90', '')],
    }),
    new GraphWidget({
      title: 'Data moved',
      width: 8,
      left: [
        hopper(METRIC.bytesUploaded, 'Sum', 'bytes uploaded'),
        hopper(METRIC.bytesCopied, 'Sum', 'bytes copied'),
      ],
      right: [hopper(METRIC.labelsAnswered, 'Sum', 'labels answered')],
    }),
  ];
}
