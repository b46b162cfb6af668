/**
 * The drop's current model and each model's lineage (docs/spending.md). The report compares the
 * run's best copied model (in a sweep, the best by train.json `promote.metric`, or by the first
 * metric the service reports) with models/<drop>/current.json, and moves current.json to it when
 * it beats that model by `promote.min_delta` on `promote.metric` (higher is better), or always
 * without `promote`. current.json is written conditionally (If-Match / If-None-Match), so two runs
 * of a drop promoting at once each decide on what the other wrote: no update is lost.
 *
 * Each of the run's model.json then gets the drop's previous model (the current one it was
 * compared with, and its own metrics minus that model's), whether it was promoted and why, and in
 * a sweep every encoder's outcome. A report retried after current.json moved finds its own model
 * current and takes the previous one from current.json's `previous`: a model is never compared
 * with itself, and a model.json keeps the lineage it was first given.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { retryable } from '../run/errors/index.js';
import type { Promotion } from '../run/status/index.js';
import { copiedModelIds, encoderOutcomes, type PromoteRule, type RunState } from '../run/state/index.js';
import { currentModelKey, modelRecordKey } from '../storage/keys.js';
import { putJson, readJson, updateJsonConditionally } from '../storage/objects.js';
import type { ModelDocument } from './copy-model.js';

/** A model as current.json and the lineage name it. */
export interface ModelSummary {
  readonly model_id: string;
  readonly run_id: string;
  readonly encoder: string;
  /** When the service created the model (its training started). */
  readonly created_at: string;
  readonly metrics: Readonly<Record<string, unknown>>;
}

/** models/<drop>/current.json: the drop's current (promoted) model. */
export interface CurrentModel extends ModelSummary {
  /** Its model.json, as an s3:// URL (model.onnx is beside it). */
  readonly record: string;
  readonly promoted_at: string;
  /** The model it replaced, or null for the drop's first. */
  readonly previous: ModelSummary | null;
}

/** model.json's `previous`: the model it was compared with, and its metrics minus that model's. */
export interface PreviousModel extends ModelSummary {
  readonly differences: Readonly<Record<string, number>>;
}

/** What the report learnt: the promotion, and the run's model.json files as now written. */
export interface Lineage {
  readonly promotion: Promotion;
  readonly records: readonly ModelDocument[];
}

interface Decision {
  readonly promoted: boolean;
  readonly reason: string;
  readonly previous: ModelSummary | null;
}

/** Conditional writes of current.json tried before the report's step is retried. */
const CURRENT_WRITE_ATTEMPTS = 8;

/**
 * Promotes the run's best copied model and writes the lineage into the run's model.json files;
 * null when the run copied no model.
 */
export async function promoteRunModels(s3: S3Client, state: RunState, now: number): Promise<Lineage | null> {
  const { bucket, drop, runId } = state.run;
  const read = await Promise.all(
    copiedModelIds(state).map((id) => readJson(s3, bucket, modelRecordKey(drop, id))),
  );
  const records = read.flatMap((found) => (isModelDocument(found?.value) ? [found.value] : []));
  if (records[0] === undefined) return null;
  const rule = state.config?.promote;
  const metric = rule?.metric ?? Object.keys(records[0].model.metrics ?? {})[0] ?? '';
  const best = records.reduce((top, record) => (score(record, metric) > score(top, metric) ? record : top));
  const candidate = summaryOf(best);
  const key = currentModelKey(drop);
  const decision = await updateJsonConditionally(s3, {
    bucket,
    key,
    attempts: CURRENT_WRITE_ATTEMPTS,
    read: async () => {
      const found = await readJson(s3, bucket, key);
      return found === null
        ? null
        : { current: isCurrent(found.value) ? found.value : null, etag: found.etag };
    },
    decide: (found) => {
      const decided = decide(candidate, found?.current ?? null, rule);
      const moves = decided.promoted && found?.current?.model_id !== candidate.model_id;
      const current: CurrentModel = {
        ...candidate,
        record: `s3://${bucket}/${modelRecordKey(drop, candidate.model_id)}`,
        promoted_at: new Date(now).toISOString(),
        previous: decided.previous,
      };
      return { write: moves ? current : null, result: decided };
    },
    contended: (attempts, error) =>
      retryable(
        'storage_error',
        `${key} changed under ${String(attempts)} writes in a row (other runs of the drop promoting); the step is retried`,
        error,
      ),
  });
  const outcomes = encoderOutcomes(state);
  const written = records.map((record): ModelDocument => ({
    ...record,
    previous: record.previous !== undefined ? record.previous : previousOf(record, decision.previous),
    promotion:
      record === best
        ? { promoted: decision.promoted, reason: decision.reason }
        : {
            promoted: false,
            reason: `model ${best.model.id} (encoder ${best.model.encoder}) of run ${runId} scored higher on ${metric}`,
          },
    ...(outcomes === undefined ? {} : { encoders: outcomes }),
  }));
  await Promise.all(
    written.map((record) => putJson(s3, bucket, modelRecordKey(drop, record.model.id), record)),
  );
  const previous = written[records.indexOf(best)]?.previous ?? null;
  return {
    promotion: {
      model_id: candidate.model_id,
      promoted: decision.promoted,
      reason: decision.reason,
      previous_model_id: previous?.model_id ?? null,
      differences: previous?.differences ?? null,
    },
    records: written,
  };
}

/** Whether `candidate` replaces `current` as the drop's current model, and why. */
export function decide(candidate: ModelSummary, current: CurrentModel | null, rule?: PromoteRule): Decision {
  if (current === null) return { promoted: true, reason: 'the drop had no current model', previous: null };
  if (current.model_id === candidate.model_id) {
    return { promoted: true, reason: "it is the drop's current model", previous: current.previous };
  }
  const previous = summaryOf(current);
  if (rule === undefined) {
    return {
      promoted: true,
      reason: 'train.json has no "promote": every new model becomes current',
      previous,
    };
  }
  const { metric, min_delta: minDelta } = rule;
  const mine = candidate.metrics[metric];
  const theirs = current.metrics[metric];
  if (typeof mine !== 'number') {
    const reported = Object.keys(candidate.metrics).join(', ') || 'none';
    return {
      promoted: false,
      reason: `model ${candidate.model_id} reports no number "${metric}" (promote.metric; its metrics: ${reported}), so model ${current.model_id} stays current`,
      previous,
    };
  }
  if (typeof theirs !== 'number') {
    return {
      promoted: true,
      reason: `the current model ${current.model_id} reports no "${metric}" to beat`,
      previous,
    };
  }
  const delta = difference(mine, theirs);
  const beats = delta > 0 && delta >= minDelta;
  const margin = minDelta > 0 ? `at least ${String(minDelta)}` : 'any margin';
  return {
    promoted: beats,
    reason: beats
      ? `${metric} ${String(mine)} beats ${String(theirs)} of model ${current.model_id} by ${String(delta)} (promote.min_delta ${String(minDelta)})`
      : `${metric} ${String(mine)} does not beat ${String(theirs)} of model ${current.model_id} by ${margin} (promote.min_delta; the difference is ${String(delta)}), so model ${current.model_id} stays current`,
    previous,
  };
}

function previousOf(record: ModelDocument, previous: ModelSummary | null): PreviousModel | null {
  if (previous === null) return null;
  const differences: Record<string, number> = {};
  for (const [name, value] of Object.entries(record.model.metrics ?? {})) {
    const before = previous.metrics[name];
    if (typeof value === 'number' && typeof before === 'number')
      differences[name] = difference(value, before);
  }
  return { ...previous, differences };
}

function summaryOf(model: ModelSummary | ModelDocument): ModelSummary {
  if ('model_id' in model) {
    const { model_id, run_id, encoder, created_at, metrics } = model;
    return { model_id, run_id, encoder, created_at, metrics };
  }
  const { id, encoder, created_at, metrics } = model.model;
  return { model_id: id, run_id: model.run.run_id, encoder, created_at, metrics: metrics ?? {} };
}

function score(record: ModelDocument, metric: string): number {
  const value = record.model.metrics?.[metric];
  return typeof value === 'number' ? value : -Infinity;
}

/** `a - b` to 6 decimals: metrics are reported to a few, and 0.91 - 0.88 is not 0.03 in floating point. */
function difference(a: number, b: number): number {
  return Math.round((a - b) * 1e6) / 1e6;
}

/** A model.json as Hopper writes it (one that is not is left alone). */
export function isModelDocument(value: unknown): value is ModelDocument {
  const record = value as Partial<ModelDocument> | undefined;
  return typeof record?.model?.id === 'string' && typeof record.run?.run_id === 'string';
}

function isCurrent(value: unknown): value is CurrentModel {
  return typeof (value as Partial<CurrentModel> | undefined)?.model_id === 'string';
}
