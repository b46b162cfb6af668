/**
 * The `Hopper` construct's props and their check: every problem at once, each naming the prop,
 * what is wrong and how to fix it (the way Solutions Constructs' `CheckProps` refuses props).
 */
import { Token, type RemovalPolicy } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';

/** The levels of the functions' logs (Powertools' POWERTOOLS_LOG_LEVEL). */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type HopperLogLevel = (typeof LOG_LEVELS)[number];

/** Credits the trainings may take (docs/spending.md). Each is a whole number of credits, at least 1. */
export interface HopperCreditBudget {
  /** In any 24 hours. @default - no daily limit */
  readonly perDay?: number;
  /** In any 30 days. @default - no 30-day limit */
  readonly per30Days?: number;
}

export interface HopperProps {
  /**
   * The training service's base URL: https, without /v1 (a CloudFormation parameter's value is
   * taken as it is and checked by its own pattern).
   */
  readonly serviceUrl: string;
  /**
   * The bucket drops arrive in, for an existing or imported one (`Bucket.fromBucketName`). Hopper
   * turns on its EventBridge notifications (for an imported bucket through CDK's
   * bucket-notifications custom resource, which keeps its other notification settings) and grants
   * its functions what they need under inbox/, status/ and models/; the rest stays its owner's.
   * @default - a new bucket: encrypted, versioned, TLS only, private, with access logs and
   * lifecycle rules
   */
  readonly bucket?: IBucket;
  /** Days an object under inbox/ is kept; a new bucket only. @default 30 */
  readonly inboxRetentionDays?: number;
  /** What happens to a new bucket and its log bucket when the stack is deleted. @default RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * The secret whose plain-text value is the training service's API key. One encrypted with your
   * own KMS key works when imported with that key (`Secret.fromSecretAttributes(this, 'Key',
   * { secretCompleteArn, encryptionKey })`): the functions that read it may decrypt with it.
   * @default - a new secret `<stack>/training-service-api-key-<creation id>` holding a placeholder
   * (`<stack>-<Hopper's path in the stack>/...` when the stack holds several Hoppers): put the key
   * in it after the first deploy
   */
  readonly apiKeySecret?: ISecret;
  /**
   * The topic alarms and run notifications go to, instead of two new encrypted topics (no topic or
   * KMS key is created then). Its policy must let CloudWatch and EventBridge publish, and its key,
   * if any, let them use it (docs/deploy.md). It must be in the region the stack is deployed to:
   * EventBridge delivers run notifications only to a topic of the rule's own region.
   * @default - two new topics, each with its own key
   */
  readonly alarmTopic?: ITopic;
  /**
   * Caps the credits trainings take; a run over it stops with `credit_budget` before spending,
   * and `hopper retry` resumes it. @default - no budget
   */
  readonly creditBudget?: HopperCreditBudget;
  /** How long Lambda and state machine logs are kept. @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
  /** The level of the functions' logs. @default 'INFO' */
  readonly logLevel?: HopperLogLevel;
  /**
   * The `source` of the run events on the default bus: letters, digits and `._-/`, not starting
   * with `aws.` @default 'hopper'
   */
  readonly eventSource?: string;
  /** An e-mail address subscribed to the new alarm topic. @default - no subscription */
  readonly notificationEmail?: string;
  /** An e-mail address subscribed to the new run notification topic. @default - no subscription */
  readonly runNotificationEmail?: string;
  /**
   * A CloudWatch dashboard of the runs, the alarms, and the functions' errors, durations and
   * throttles. `false` leaves it out, saving its monthly charge (docs/operations.md, "What it
   * costs"). @default true
   */
  readonly dashboard?: boolean;
  /**
   * One alarm per function on throttled invocations, combined into the LambdaThrottles composite
   * alarm. `false` leaves the 12 alarms and the composite alarm out (a throttled step still retries,
   * and fails its run if still throttled: the ExecutionsFailed alarm fires then), saving their
   * monthly charge (docs/operations.md, "What it costs"). @default true
   */
  readonly throttleAlarms?: boolean;
}

/** A value known at synth (not a token such as a CloudFormation parameter's). */
function known<T>(value: T | undefined): value is T {
  return value !== undefined && !Token.isUnresolved(value);
}

const E_MAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Every problem of `props`, as sentences that name the prop; none: an empty list. */
export function hopperPropsProblems(props: HopperProps): string[] {
  return [
    ...serviceUrlProblems(props.serviceUrl),
    ...creditBudgetProblems(props.creditBudget),
    ...settingProblems(props),
    ...conflicts(props),
  ];
}

/** Why `value` is not a training service base URL; undefined when it is one. */
export function serviceUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return `"${value}" is not a URL`;
  const url = new URL(value);
  // The API key travels in the Authorization header: never over plain http.
  if (url.protocol !== 'https:') return `"${value}" must be an https:// URL`;
  if (/\/v1\/?$/.test(url.pathname)) return `give the base URL without /v1 (Hopper adds it), not "${value}"`;
  return undefined;
}

export function emailProblem(value: string): string | undefined {
  return E_MAIL.test(value) ? undefined : `"${value}" is not an e-mail address`;
}

/**
 * An event source PutEvents takes from Hopper: up to 256 printable characters, and not one of
 * AWS's (`aws.*`), which EventBridge refuses from an account.
 */
export function eventSourceProblem(value: string): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,255}$/.test(value)) {
    return `"${value}" is not an event source: use letters, digits and . _ - / (e.g. hopper or com.example.hopper)`;
  }
  if (/^aws\./i.test(value)) return `"${value}" starts with "aws.", which only AWS services may use`;
  return undefined;
}

function serviceUrlProblems(url: string | undefined): string[] {
  if (url === undefined || (typeof url === 'string' && url.trim() === '')) {
    return ["serviceUrl is required: the training service's base URL, https://..."];
  }
  const problem = known(url) ? serviceUrlProblem(url) : undefined;
  return problem === undefined ? [] : [`serviceUrl ${problem}`];
}

function creditBudgetProblems(budget: HopperCreditBudget | undefined): string[] {
  return (['perDay', 'per30Days'] as const).flatMap((name) => {
    const credits = budget?.[name];
    if (credits === undefined || Token.isUnresolved(credits)) return [];
    if (credits === 0) {
      return [
        `creditBudget.${name} is 0, which would refuse every training: leave creditBudget out for no budget, or give at least 1`,
      ];
    }
    return Number.isInteger(credits) && credits >= 1
      ? []
      : [`creditBudget.${name} must be a whole number of credits >= 1, got ${String(credits)}`];
  });
}

function settingProblems(props: HopperProps): string[] {
  const problems: string[] = [];
  const days = props.inboxRetentionDays;
  if (days !== undefined && !(Number.isInteger(days) && days >= 1)) {
    problems.push(`inboxRetentionDays must be a whole number of days >= 1, got ${String(days)}`);
  }
  if (props.logLevel !== undefined && !LOG_LEVELS.includes(props.logLevel)) {
    problems.push(`logLevel "${props.logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const source = props.eventSource;
  const sourceProblem = known(source) ? eventSourceProblem(source) : undefined;
  if (sourceProblem !== undefined) problems.push(`eventSource ${sourceProblem}`);
  for (const name of ['notificationEmail', 'runNotificationEmail'] as const) {
    const address = props[name];
    const problem = known(address) ? emailProblem(address) : undefined;
    if (problem !== undefined) problems.push(`${name} ${problem}`);
  }
  return problems;
}

/** Props that mean nothing together: they would be ignored without a word. */
function conflicts(props: HopperProps): string[] {
  const problems: string[] = [];
  if (props.bucket !== undefined) {
    const given = (['inboxRetentionDays', 'removalPolicy'] as const).filter(
      (name) => props[name] !== undefined,
    );
    if (given.length > 0) {
      problems.push(
        `${given.join(' and ')} ${given.length === 1 ? 'configures' : 'configure'} a bucket Hopper creates: with bucket (your own), leave them out and set them on that bucket`,
      );
    }
  }
  if (props.alarmTopic !== undefined) {
    const given = (['notificationEmail', 'runNotificationEmail'] as const).filter(
      (name) => props[name] !== undefined,
    );
    if (given.length > 0) {
      problems.push(
        `${given.join(' and ')} ${given.length === 1 ? 'subscribes' : 'subscribe'} to a topic Hopper creates: with alarmTopic (your own), subscribe to that topic instead`,
      );
    }
  }
  return problems;
}
