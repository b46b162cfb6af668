/**
 * Hopper's own EventBridge events: `Hopper Run Started` when a run takes its drop, and
 * `Hopper Run Succeeded` or `Hopper Run Failed` when it ends, each once per run (event-bus.ts
 * says how). What they carry is built here from the run's state; docs/operations.md shows a
 * sample and a rule. Field names follow status/<drop>.json (snake_case), so a consumer reads
 * both the same way. Never the API key: nothing here comes from the runtime's secrets.
 */
import { modelFileKey, modelRecordKey, statusKey } from '../../storage/keys.js';
import { capitalised } from '../../core/errors/messages.js';
import { encoderOutcomes } from '../../core/state/sweep.js';
import { RUN_OUTCOMES, type RunOutcome } from '../../core/state/vocabulary.js';
import type { EncoderOutcome, ReportSlot, RunState } from '../../core/state/state.js';
import { modelLocation, type Promotion, type RunStatus } from '../status/status.js';
import type { RunPhase } from '../../core/state/vocabulary.js';

/** The `source` of Hopper's events unless the stack is told otherwise (`-c eventSource=...`). */
export const DEFAULT_EVENT_SOURCE = 'hopper';

/** A run event: the run started, or it ended with its report's outcome. */
export type RunEventKind = 'started' | RunOutcome;
export type RunEventDetailType = `Hopper Run ${Capitalize<RunEventKind>}`;

/**
 * Each kind's detail type: `Hopper Run Started`, `Hopper Run Succeeded`, ... (`Superseded`: a newer
 * train.json of the drop took over; docs/pipeline.md, "A drop uploaded again").
 */
export const RUN_EVENT_TYPES = Object.fromEntries(
  (['started', ...RUN_OUTCOMES] as const).map((kind) => [kind, `Hopper Run ${capitalised(kind)}`]),
) as Readonly<Record<RunEventKind, RunEventDetailType>>;

/** Where docs/errors.md is, named in failure summaries (every code and what to do). */
const ERRORS_DOC = 'docs/errors.md';

export interface RunEventDetail {
  /**
   * `<run id>/<kind>`: the same for every delivery of one event, so a consumer that must never
   * act twice can keep the ids it has seen (EventBridge's own `id` differs per PutEvents).
   */
  readonly event_id: string;
  readonly run_id: string;
  readonly drop: string;
  /** The Step Functions execution, or null for a run started without Hopper's trigger. */
  readonly execution_arn: string | null;
  readonly state: Exclude<RunPhase, 'interrupted'>;
  readonly bucket: string;
  /** The train.json that started the run. */
  readonly train_json: string;
  readonly dataset_id: string | null;
  /** The run's model: once copied, the one `promotion` names (a sweep's best); else its latest. */
  readonly model_id: string | null;
  /** Where that model is, once copied: s3:// URLs of model.onnx and model.json. */
  readonly model: RunStatus['model'];
  /** The service's metrics of that model, once copied, as in model.json. */
  readonly metrics: Metrics | null;
  /**
   * For a run that copied a model: whether its (best) model became the drop's current model and
   * why, the previous model's id and the difference of each metric (status file's `promotion`).
   */
  readonly promotion: Promotion | null;
  /** The drop's current model once the run's report decided (current.json), when it copied one. */
  readonly current_model_id: string | null;
  /** In a sweep: each encoder's outcome, its model and that model's metrics (once copied). */
  readonly encoders: readonly (EncoderOutcome & { readonly metrics: Metrics | null })[] | null;
  /** Trainings started for the run's dataset, failed ones included. */
  readonly attempts: number;
  /** Credits the run spent or holds: a training that did not fail (a failed one's comes back). */
  readonly credits: number;
  readonly started_at: string;
  /** Null in a Started event. */
  readonly finished_at: string | null;
  readonly duration_seconds: number | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  /** One paragraph for a person (the run notifications send it as is). */
  readonly summary: string;
}

type Metrics = Readonly<Record<string, unknown>>;

/** What the end event reads of the run's model.json files: the service's record of each model. */
export interface ModelRecord {
  readonly model: {
    readonly id: string;
    readonly metrics: Metrics | null;
    readonly onnx_bytes: number | null;
  };
}

export interface RunEvent {
  readonly detailType: RunEventDetailType;
  readonly detail: RunEventDetail;
}

/** What only the report knows: the outcome and, for copied models, their records and promotion. */
export interface RunEnd {
  readonly report: ReportSlot;
  readonly records: readonly ModelRecord[];
  readonly promotion?: Promotion | null;
  readonly finishedAt: number;
  /** The run's credits as its usage summary counts them (usage.ts: each training it started that kept its credit). */
  readonly credits: number;
}

export function runStartedEvent(state: RunState): RunEvent {
  const base = baseDetail(state, 'started');
  const summary = `Hopper run ${base.run_id} started for drop "${base.drop}" (s3://${base.bucket}/${base.train_json}).`;
  return { detailType: RUN_EVENT_TYPES.started, detail: { ...base, summary } };
}

export function runEndedEvent(state: RunState, end: RunEnd): RunEvent {
  const kind = end.report.outcome;
  const base = baseDetail(state, kind);
  const durationSeconds = Math.max(0, Math.round((end.finishedAt - Date.parse(base.started_at)) / 1000));
  const record = (id: string | null) => end.records.find((one) => one.model.id === id)?.model;
  const promotion = end.promotion ?? null;
  // The run's model is the one the promotion names: in a sweep the best, not the last encoder's.
  const chosen = record(promotion?.model_id ?? base.model_id);
  const { bucket, drop } = state.run;
  const detail = {
    ...base,
    state: kind,
    ...(promotion === null || chosen === undefined
      ? {}
      : {
          model_id: chosen.id,
          model: {
            onnx: `s3://${bucket}/${modelFileKey(drop, chosen.id)}`,
            record: `s3://${bucket}/${modelRecordKey(drop, chosen.id)}`,
            bytes: chosen.onnx_bytes ?? 0,
          },
        }),
    metrics: promotion === null && base.model === null ? null : (chosen?.metrics ?? null),
    promotion,
    current_model_id:
      promotion?.promoted === true ? promotion.model_id : (promotion?.previous_model_id ?? null),
    encoders:
      encoderOutcomes(state)?.map((one) => ({ ...one, metrics: record(one.model_id)?.metrics ?? null })) ??
      null,
    credits: end.credits,
    finished_at: new Date(end.finishedAt).toISOString(),
    duration_seconds: durationSeconds,
    error: end.report.error,
  };
  return { detailType: RUN_EVENT_TYPES[kind], detail: { ...detail, summary: endSummary(detail) } };
}

function baseDetail(state: RunState, kind: RunEventKind): Omit<RunEventDetail, 'summary'> {
  const { run, dataset, model, copy } = state;
  const modelId = model?.id ?? null;
  return {
    event_id: `${run.runId}/${kind}`,
    run_id: run.runId,
    drop: run.drop,
    execution_arn: run.executionArn ?? null,
    state: 'running',
    bucket: run.bucket,
    train_json: run.key,
    dataset_id: dataset?.id ?? null,
    model_id: modelId,
    model: modelLocation(run, copy),
    metrics: null,
    promotion: null,
    current_model_id: null,
    encoders: null,
    attempts: model?.attempts ?? 0,
    credits: 0,
    started_at: run.startedAt,
    finished_at: null,
    duration_seconds: null,
    error: null,
  };
}

function endSummary(detail: Omit<RunEventDetail, 'summary'>): string {
  const took = `in ${formatDuration(detail.duration_seconds ?? 0)}`;
  const run = `Hopper run ${detail.run_id} of drop "${detail.drop}"`;
  const spent = `${String(detail.attempts)} training attempt${detail.attempts === 1 ? '' : 's'}, ${String(detail.credits)} credit${detail.credits === 1 ? '' : 's'}`;
  if (detail.state === 'succeeded') {
    const where =
      detail.model === null
        ? 'its model was copied'
        : `the model is at ${detail.model.onnx} (record: ${detail.model.record})`;
    const metrics =
      detail.metrics === null || Object.keys(detail.metrics).length === 0
        ? 'the service gave no metrics'
        : `metrics: ${formatMetrics(detail.metrics)}`;
    return `${run} succeeded ${took}: ${where}; model ${detail.model_id ?? '(unknown)'}, dataset ${detail.dataset_id ?? '(unknown)'}; ${metrics}; ${promotionSummary(detail.promotion)}${spent}.`;
  }
  if (detail.state === 'superseded') {
    const what = detail.error?.message.replace(/[.\s]+$/, '') ?? 'a newer train.json of the drop took over';
    return `${run} gave way to a newer train.json of the drop ${took}: ${what}. Status: s3://${detail.bucket}/${statusKey(detail.drop)} (superseded_runs); ${spent}.`;
  }
  const error = detail.error ?? { code: 'internal_error', message: 'no error was recorded' };
  // The message already says what to do (every Hopper error message does); the code's row in
  // docs/errors.md says more, so the advice is written once.
  const message = error.message.replace(/[.\s]+$/, '');
  return `${run} failed ${took} with ${error.code}: ${message}. What to do: as the message says; the "${error.code}" row of ${ERRORS_DOC} explains the code. Status: s3://${detail.bucket}/${statusKey(detail.drop)}; ${spent}.`;
}

function promotionSummary(promotion: Promotion | null): string {
  if (promotion === null) return '';
  return `${promotion.promoted ? 'promoted to' : 'not promoted to'} the drop's current model: ${promotion.reason}; `;
}

function formatMetrics(metrics: Readonly<Record<string, unknown>>): string {
  return Object.entries(metrics)
    .map(([name, value]) => `${name} ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
}

function formatDuration(seconds: number): string {
  if (seconds < 60) return `${String(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${String(minutes)} min ${String(seconds % 60)} s`;
  return `${String(Math.floor(minutes / 60))} h ${String(minutes % 60)} min`;
}
