/**
 * Hopper's own CloudWatch metrics (embedded metric format, lambdas/runtime/metrics.ts): one place
 * for the names, which the dashboard (infra/constructs/monitoring.ts) graphs. Plain data, so the
 * CDK app reads it without loading Powertools.
 */

/** The CloudWatch namespace of every Hopper metric. */
export const METRICS_NAMESPACE = 'Hopper';

/** The `service` dimension Powertools puts on every metric (and the logger's service name). */
export const SERVICE_NAME = 'hopper';

export const METRIC = {
  /** A run's first step ran (Count). */
  runsStarted: 'RunsStarted',
  /** A run's report found it succeeded (Count). */
  runsSucceeded: 'RunsSucceeded',
  /** A run's report found a newer train.json of the drop took over (Count): not a failure. */
  runsSuperseded: 'RunsSuperseded',
  /** A run's report found it failed (Count); also by the `ErrorCode` dimension. */
  runsFailed: 'RunsFailed',
  /** Credits a finished run's trainings hold (Count). */
  creditsSpent: 'CreditsSpent',
  /** The credit budget's share in use after a credit was taken, its fullest window (Percent). */
  creditBudgetUsed: 'CreditBudgetUsed',
  /** From the run's start to its report (Milliseconds). */
  runDuration: 'RunDuration',
  /** The estimated AWS cost of a finished run, in US dollars (None). */
  runAwsCost: 'RunAwsCostUsd',
  /** One invocation of a step, by the `Step` dimension (Milliseconds). */
  stepDuration: 'StepDuration',
  /** Bytes of the drop's data files sent to the service (Bytes). */
  bytesUploaded: 'BytesUploaded',
  /** Bytes of model files copied into the bucket (Bytes). */
  bytesCopied: 'BytesCopied',
  /** Held-out examples answered from the labels file (Count). */
  labelsAnswered: 'LabelsAnswered',
} as const;

/** The dimension of RunsFailed that holds the error code. */
export const ERROR_CODE_DIMENSION = 'ErrorCode';
/** The dimension of StepDuration that holds the step (`upload_files`, ...). */
export const STEP_DIMENSION = 'Step';
