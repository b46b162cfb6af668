/**
 * The metrics one invocation emits, as CloudWatch embedded metric format lines on stdout
 * (Powertools Metrics; CloudWatch Logs turns them into metrics in the Hopper namespace). A fresh
 * Metrics instance per invocation, so two overlapping invocations (local mode) never mix their
 * metrics or dimensions.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  ERROR_CODE_DIMENSION,
  METRIC,
  METRICS_NAMESPACE,
  SERVICE_NAME,
  STEP_DIMENSION,
} from './metric-names.js';
import { copiedModel, type ReportSlot, type RunState } from '../core/state/state.js';
import type { RunSummary } from '../records/status/usage.js';
import type { StepName } from '../core/state/vocabulary.js';

export interface InvocationOutcome {
  readonly step: StepName;
  readonly ms: number;
  /** The state the invocation got. */
  readonly before: RunState;
  /** The state with the invocation's slot, or undefined when it failed. */
  readonly after: RunState | undefined;
  /** The run's summary before this invocation: null for the run's first. */
  readonly previous: RunSummary | null;
  /** The summary with this invocation. */
  readonly summary: RunSummary;
  readonly now: number;
}

export function emitInvocationMetrics(outcome: InvocationOutcome): void {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
  const { step, before, after } = outcome;

  const duration = metrics.singleMetric();
  duration.addDimension(STEP_DIMENSION, step);
  duration.addMetric(METRIC.stepDuration, MetricUnit.Milliseconds, outcome.ms);

  // The run's first step, the first time: a retried one finds the summary its failure wrote,
  // and a run whose status a newer run of the drop owns (no summary of its own) is not new.
  if (step === 'validate_drop' && outcome.previous === null) {
    metrics.addMetric(METRIC.runsStarted, MetricUnit.Count, 1);
  }
  if (after !== undefined) {
    const labelled = (after.dataset?.labelled ?? 0) - (before.dataset?.labelled ?? 0);
    if (labelled > 0) metrics.addMetric(METRIC.labelsAnswered, MetricUnit.Count, labelled);
    // Uploading is time-boxed over several invocations: the bytes count once, when it is done.
    if (step === 'upload_files' && after.dataset?.nextAction !== 'upload_files') {
      const bytes = (after.config?.files ?? []).reduce((sum, file) => sum + file.bytes, 0);
      metrics.addMetric(METRIC.bytesUploaded, MetricUnit.Bytes, bytes);
    }
    const copied = step === 'copy_model' ? copiedModel(after.copy) : undefined;
    if (copied !== undefined) metrics.addMetric(METRIC.bytesCopied, MetricUnit.Bytes, copied.bytes);
    if (after.report !== undefined) emitOutcome(metrics, after.report, outcome);
  }
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}

function emitOutcome(metrics: Metrics, report: ReportSlot, outcome: InvocationOutcome): void {
  if (report.outcome === 'succeeded') {
    metrics.addMetric(METRIC.runsSucceeded, MetricUnit.Count, 1);
  } else if (report.outcome === 'superseded') {
    metrics.addMetric(METRIC.runsSuperseded, MetricUnit.Count, 1);
  } else {
    metrics.addMetric(METRIC.runsFailed, MetricUnit.Count, 1);
    const byCode = metrics.singleMetric();
    byCode.addDimension(ERROR_CODE_DIMENSION, report.error?.code ?? 'unknown');
    byCode.addMetric(METRIC.runsFailed, MetricUnit.Count, 1);
  }
  metrics.addMetric(METRIC.creditsSpent, MetricUnit.Count, outcome.summary.credits);
  const started = Date.parse(outcome.before.run.startedAt);
  if (Number.isFinite(started)) {
    metrics.addMetric(METRIC.runDuration, MetricUnit.Milliseconds, Math.max(0, outcome.now - started));
  }
  metrics.addMetric(METRIC.runAwsCost, MetricUnit.NoUnit, outcome.summary.aws_usd.total);
}

/** The credit budget's share in use, once a training took a credit (lambdas/ownership/credit-ledger.ts). */
export function emitCreditBudgetUse(sharePercent: number): void {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
  metrics.addMetric(METRIC.creditBudgetUsed, MetricUnit.Percent, sharePercent);
  metrics.publishStoredMetrics();
}
