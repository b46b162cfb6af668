/**
 * The stack's settings from CDK context (`cdk deploy -c key=value`, or "context" in cdk.json),
 * checked with a zod schema (as train.json is, lambdas/drop/train-json.ts) so a typo fails at
 * synth, every wrong setting named at once with what to give, rather than at deploy. Every key
 * and its default is listed in docs/deploy.md.
 */
import type { StackProps } from 'aws-cdk-lib';
import type { Node } from 'constructs';
import * as z from 'zod';
import {
  LOG_LEVELS,
  emailProblem,
  eventSourceProblem,
  serviceUrlProblem,
  type HopperLogLevel,
} from './constructs/hopper-props.js';

export const DEFAULT_STACK_NAME = 'Hopper';

/** The settings of one deployment (each described below) and the stack's own. */
export interface HopperStackProps extends StackProps, HopperSettings {}

export interface HopperConfig {
  readonly stackName: string;
  readonly props: HopperStackProps;
}

/** A context value left out: absent, null or an empty string (`-c key=`). */
function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** An optional string setting, trimmed, then checked by `rule` (which says what is wrong). */
function textSetting(rule: (value: string) => string | undefined = () => undefined) {
  return z.preprocess(
    (value) => (isBlank(value) ? undefined : value),
    z
      .string({ error: (issue) => `must be a string, got ${JSON.stringify(issue.input)}` })
      .trim()
      .superRefine((value, ctx) => {
        const problem = rule(value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional(),
  );
}

/** A rule for `textSetting`: the value matches `pattern`, or it "is not <what>". */
function matching(pattern: RegExp, what: string): (value: string) => string | undefined {
  return (value) => (pattern.test(value) ? undefined : `"${value}" is not ${what}`);
}

/** An optional whole number >= 1 of `unit`: `-c key=7` arrives as a string, cdk.json may hold a number. */
function wholeNumberSetting(unit: string) {
  return z.unknown().transform((value, ctx): number | undefined => {
    if (isBlank(value)) return undefined;
    const number = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
    if (Number.isInteger(number) && number >= 1) return number;
    ctx.addIssue({
      code: 'custom',
      message: `must be a whole number of ${unit} >= 1, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  });
}

/** Each setting, as context gives it and as HopperStack takes it (docs/deploy.md lists them). */
const Settings = z.object({
  /**
   * The training service's base URL (https, without /v1).
   * @default - a CloudFormation parameter `ServiceUrl` without a default: pass it to `cdk deploy`
   * as `--parameters ServiceUrl=https://...` (the CLI does not prompt; later deploys reuse it)
   */
  serviceUrl: textSetting(serviceUrlProblem),
  /**
   * The name of an existing Secrets Manager secret whose plain-text value is the API key.
   * @default - a new secret `<stack name>/training-service-api-key-<creation id>` (output
   * `ApiKeySecretName`; infra/names.ts) holding a random placeholder: put the key in it after
   * the first deploy
   */
  apiKeySecretName: textSetting(),
  /**
   * The ARN of the customer managed KMS key that encrypts that existing secret: the functions that
   * read the secret may decrypt with it, through Secrets Manager. @default - the AWS managed key
   */
  apiKeySecretKmsKeyArn: textSetting(kmsKeyArnProblem),
  /**
   * The name of an existing bucket to use; its EventBridge notifications are turned on.
   * @default - a new bucket (output `BucketName`)
   */
  bucketName: textSetting(matching(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'a valid S3 bucket name')),
  /** An e-mail address that receives the alarms. @default - no subscription */
  notificationEmail: textSetting(emailProblem),
  /**
   * An e-mail address that receives a summary of every run that ended (the run notification
   * topic, apart from the alarms). @default - no subscription
   */
  runNotificationEmail: textSetting(emailProblem),
  /**
   * The `source` of Hopper's run events on the default EventBridge bus.
   * @default DEFAULT_EVENT_SOURCE (`hopper`)
   */
  eventSource: textSetting(eventSourceProblem),
  /** The stack's name (context only). @default DEFAULT_STACK_NAME */
  stackName: textSetting(matching(/^[A-Za-z][A-Za-z0-9-]{0,127}$/, 'a valid CloudFormation stack name')),
  /** The level of every function's logs (POWERTOOLS_LOG_LEVEL). @default 'INFO' */
  logLevel: textSetting((value) =>
    logLevelOf(value) === undefined
      ? `"${value}" is not a log level; use one of ${LOG_LEVELS.join(', ')}`
      : undefined,
  ),
  /** Days an object under inbox/ is kept; new bucket only. @default 30 */
  inboxRetentionDays: wholeNumberSetting('days'),
  /** Credits the trainings may take in any 24 hours (docs/spending.md). @default - no budget */
  creditBudget: wholeNumberSetting('credits'),
  /** Credits the trainings may take in any 30 days. @default - no budget */
  creditBudget30Days: wholeNumberSetting('credits'),
});

/** The settings HopperStack takes (HopperStackProps): all but the stack's name, the log level checked. */
export type HopperSettings = Readonly<Partial<Omit<z.output<typeof Settings>, 'stackName' | 'logLevel'>>> & {
  readonly logLevel?: HopperLogLevel;
};

const ContextSchema = Settings.superRefine((settings, ctx) => {
  // A secret the stack creates is encrypted with the AWS managed key, which needs no grant.
  if (settings.apiKeySecretKmsKeyArn !== undefined && settings.apiKeySecretName === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['apiKeySecretKmsKeyArn'],
      message: 'applies to the existing secret given by apiKeySecretName: give that too, or leave this out',
    });
  }
});

/** The context keys Hopper reads (docs/deploy.md, "Settings"). */
export const CONTEXT_KEYS = Object.keys(Settings.shape);

/**
 * The stack's settings from context.
 * @throws Error naming every setting that is wrong (not just the first), each with what to give
 */
export function configFromContext(node: Node): HopperConfig {
  const given = Object.fromEntries(CONTEXT_KEYS.map((key) => [key, node.tryGetContext(key)]));
  const parsed = ContextSchema.safeParse(given);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `context ${issue.path.map(String).join('.')}: ${issue.message}`,
    );
    throw new Error(
      problems.length === 1
        ? (problems[0] ?? '')
        : `${String(problems.length)} context settings are wrong (docs/deploy.md lists them):\n${problems.map((problem) => `  - ${problem}`).join('\n')}`,
    );
  }
  const { stackName, logLevel, ...settings } = parsed.data;
  return {
    stackName: stackName ?? DEFAULT_STACK_NAME,
    props: { ...settings, logLevel: logLevel === undefined ? undefined : logLevelOf(logLevel) },
  };
}

/** A key's ARN: IAM takes neither an alias nor a bare key id as the key a grant is on. */
function kmsKeyArnProblem(value: string): string | undefined {
  return /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(value)
    ? undefined
    : `"${value}" is not a KMS key ARN: give arn:aws:kms:<region>:<account>:key/<key id> (not an alias)`;
}

function logLevelOf(value: string): HopperLogLevel | undefined {
  return LOG_LEVELS.find((known) => known === value.toUpperCase());
}
