/**
 * What an operator watches: alarms on runs that failed, timed out or were aborted, on events
 * the trigger could not take (dead-letter queue) and on trigger errors, all sent to one SNS
 * topic (optionally e-mailed), and a small dashboard of the same.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

export interface HopperMonitoringProps {
  readonly stateMachine: IStateMachine;
  readonly deadLetterQueue: IQueue;
  readonly trigger: IFunction;
  /** The Task functions by state name, graphed on the dashboard. @default - none graphed */
  readonly taskFunctions?: Readonly<Record<string, IFunction>>;
  /** An e-mail address subscribed to the alarm topic (it must confirm). @default - no subscription */
  readonly notificationEmail?: string;
  /** The period each alarm looks at. @default Duration.minutes(5) */
  readonly period?: Duration;
  /** Whether to create the dashboard. @default true */
  readonly dashboard?: boolean;
}

export class HopperMonitoring extends Construct {
  /** Every alarm notifies this topic. */
  readonly topic: Topic;
  readonly alarms: readonly Alarm[];
  readonly dashboard?: Dashboard;

  constructor(scope: Construct, id: string, props: HopperMonitoringProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);

    // A customer managed key: CloudWatch cannot publish to a topic under the AWS managed SNS key.
    const key = new Key(this, 'TopicKey', {
      description: 'Hopper: encrypts the alarm topic',
      enableKeyRotation: true,
    });
    key.grant(new ServicePrincipal('cloudwatch.amazonaws.com'), 'kms:Decrypt', 'kms:GenerateDataKey*');
    this.topic = new Topic(this, 'AlarmTopic', {
      displayName: 'Hopper alarms',
      masterKey: key,
      enforceSSL: true,
    });
    if (props.notificationEmail !== undefined) {
      this.topic.addSubscription(new EmailSubscription(props.notificationEmail));
    }

    const atLeastOnce = (name: string, description: string, metric: IMetric): Alarm => {
      const alarm = new Alarm(this, name, {
        alarmDescription: description,
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      alarm.addAlarmAction(new SnsAction(this.topic));
      return alarm;
    };
    const machine = props.stateMachine;
    this.alarms = [
      atLeastOnce(
        'ExecutionsFailed',
        'A Hopper run failed: status/<drop>.json in the bucket says why and what to do.',
        machine.metricFailed({ period, statistic: 'Sum' }),
      ),
      atLeastOnce(
        'ExecutionsTimedOut',
        'A Hopper run timed out before its report step could record the outcome.',
        machine.metricTimedOut({ period, statistic: 'Sum' }),
      ),
      atLeastOnce(
        'ExecutionsAborted',
        'A Hopper run was stopped (aborted) by hand or by a redeploy; its status file stays "running".',
        machine.metricAborted({ period, statistic: 'Sum' }),
      ),
      atLeastOnce(
        'TriggerDeadLetters',
        'An S3 event could not start a run: see the messages in the trigger dead-letter queue.',
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      ),
      atLeastOnce(
        'TriggerErrors',
        'The trigger Lambda failed: a dropped train.json may not have started a run (see its logs).',
        props.trigger.metricErrors({ period, statistic: 'Sum' }),
      ),
    ];

    if (props.dashboard ?? true) {
      this.dashboard = this.createDashboard(props, period);
    }
  }

  private createDashboard(props: HopperMonitoringProps, period: Duration): Dashboard {
    const machine = props.stateMachine;
    const dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `Hopper-${Stack.of(this).stackName}`,
    });
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: [...this.alarms], width: 24 }),
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
    const tasks = Object.entries(props.taskFunctions ?? {});
    if (tasks.length > 0) {
      dashboard.addWidgets(
        new GraphWidget({
          title: 'Task errors',
          width: 12,
          left: tasks.map(([name, fn]) => fn.metricErrors({ period, statistic: 'Sum', label: name })),
        }),
        new GraphWidget({
          title: 'Task duration (p90)',
          width: 12,
          left: tasks.map(([name, fn]) => fn.metricDuration({ period, statistic: 'p90', label: name })),
        }),
      );
    }
    return dashboard;
  }
}
