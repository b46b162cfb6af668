/**
 * The drop's current model and each model's lineage (docs/spending.md). The report compares the
 * run's best copied model (in a sweep, the best by train.json `promote.metric`, or by the first
 * metric the service reports) with models/<drop>/current.json, and moves current.json to it when
 * it beats that model by `promote.min_delta` on `promote.metric` (higher is better); without
 * `promote`, whenever the current model's run started no later than this one. With or without
 * `promote`, a model never replaces that of a run that started later than the run promoting it:
 * the newest train.json is what the user wants (runs are ordered by their start, as status.ts
 * isNewerRun orders them, not by when their reports finish). A run a newer train.json took over
 * (superseded, finishing a training it had paid for) moves current.json not at all.
 * current.json is written conditionally (If-Match / If-None-Match), so two runs of a drop
 * promoting at once each decide on what the other wrote: no update is lost.
 *
 * Each of the run's model.json then gets the drop's previous model (the current one it was
 * compared with, and its own metrics minus that model's), whether it was promoted and why, and in
 * a sweep every encoder's outcome. A retried report keeps that lineage whole (its promotion with
 * its previous model) and decides nothing again; one retried after current.json moved but before
 * its model.json was written finds its own model current and takes the previous one from
 * current.json's `previous`: a model is never compared with itself.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { contendedWrite } from '../core/errors/index.js';
import { isNewerRun, type Promotion } from '../records/status/index.js';
import {
  configFingerprint,
  copiedModelIds,
  encoderOutcomes,
  type PromoteRule,
  type RunState,
} from '../core/state/index.js';
import type { NewerRun } from '../ownership/index.js';
import { currentModelKey, modelRecordKey } from '../storage/keys.js';
import { putJson, readJson, updateJsonConditionally } from '../storage/objects.js';
import type { ModelDocument, ModelSummary, PreviousModel } from './copy-model.js';

export type { ModelSummary, PreviousModel } from './copy-model.js';

/** models/<drop>/current.json: the drop's current (promoted) model. */
export interface CurrentModel extends ModelSummary {
  /** Its model.json, as an s3:// URL (model.onnx is beside it). */
  readonly record: string;
  readonly promoted_at: string;
  /** The model it replaced, or null for the drop's first. */
  readonly previous: ModelSummary | null;
}

/** What the report learnt: the promotion, and the run's model.json files as now written. */
export interface Lineage {
  readonly promotion: Promotion;
  readonly records: readonly ModelDocument[];
}

/**
 * Whether to promote, and why; `previous`: the drop's current model the candidate was compared
 * with (its own previous one, if it is it).
 */
export type Decision = Pick<Promotion, 'promoted' | 'reason'> & { readonly previous: ModelSummary | null };

/**
 * Promotes the run's best copied model and writes the lineage into the run's model.json files;
 * null when the run copied no model. `supersededBy`: the newer run that took the drop over, when
 * one did; the model is then recorded but not promoted.
 */
export async function promoteRunModels(
  s3: S3Client,
  state: RunState,
  now: number,
  supersededBy: NewerRun | null = null,
): Promise<Lineage | null> {
  const { bucket, drop } = state.run;
  const ids = copiedModelIds(state);
  const found = await Promise.all(ids.map((id) => readJson(s3, bucket, modelRecordKey(drop, id))));
  const records = found.map((read) => read?.value).filter(isModelDocument);
  const metric = state.config?.promote?.metric ?? Object.keys(records[0]?.model.metrics ?? {})[0] ?? '';
  const score = (record: ModelDocument): number => Number(record.model.metrics?.[metric] ?? -Infinity);
  const best = records.reduce<ModelDocument | undefined>(
    (top, record) => (top === undefined || score(record) > score(top) ? record : top),
    undefined,
  );
  if (best === undefined) return null;
  // A retried report keeps what its first try wrote into the run's own models: promotion and
  // previous model together. Models adopted from an earlier run are decided again.
  const kept = (record: ModelDocument) =>
    record.run.run_id === state.run.runId ? record.promotion : undefined;
  const first = kept(best);
  const decision =
    first === undefined
      ? await writeCurrent(s3, state, summaryOf(best), {
          now,
          notCurrent: notCurrentBecause(state, best, supersededBy),
        })
      : { ...first, previous: best.previous ?? null };
  const outcomes = encoderOutcomes(state);
  const written = records.map((record): ModelDocument => {
    if (kept(record) !== undefined) return { ...record, encoders: outcomes };
    const { promoted, reason } =
      record === best
        ? decision
        : { promoted: false, reason: `model ${best.model.id} of the sweep scored higher on ${metric}` };
    // A model of the sweep that was the drop's current one (a resumed sweep's first) keeps the
    // model it was compared with: a model is never its own previous.
    const self = decision.previous?.model_id === record.model.id;
    const previous = previousOf(record, self ? (record.previous ?? null) : decision.previous);
    return { ...record, previous, promotion: { promoted, reason }, encoders: outcomes };
  });
  await Promise.all(
    written.map((record) => putJson(s3, bucket, modelRecordKey(drop, record.model.id), record)),
  );
  const previous = written[records.indexOf(best)]?.previous ?? null;
  const { promoted, reason } = decision;
  const compared = {
    previous_model_id: previous?.model_id ?? null,
    differences: previous?.differences ?? null,
  };
  return { promotion: { model_id: best.model.id, promoted, reason, ...compared }, records: written };
}

/** Moves current.json to `candidate` when it wins (conditionally: decided again on a lost race). */
async function writeCurrent(
  s3: S3Client,
  state: RunState,
  candidate: ModelSummary,
  { now, notCurrent }: { readonly now: number; readonly notCurrent: string | null },
): Promise<Decision> {
  const { bucket, drop } = state.run;
  const key = currentModelKey(drop);
  return await updateJsonConditionally(s3, {
    bucket,
    key,
    read: async () => {
      const found = await readJson(s3, bucket, key);
      // A file without a model_id is no current model: the write replaces it.
      const value = found?.value as Partial<CurrentModel> | null | undefined;
      const current = value?.model_id === undefined ? null : (value as CurrentModel);
      return found === null ? null : { current, etag: found.etag };
    },
    decide: (found) => {
      const current = found?.current ?? null;
      const decision =
        notCurrent === null || current?.model_id === candidate.model_id
          ? decide(candidate, current, state.config?.promote, state.run)
          : givesWay(current, notCurrent);
      const record = `s3://${bucket}/${modelRecordKey(drop, candidate.model_id)}`;
      const next: CurrentModel = {
        ...candidate,
        record,
        promoted_at: new Date(now).toISOString(),
        previous: decision.previous,
      };
      const moves = decision.promoted && current?.model_id !== candidate.model_id;
      return { write: moves ? next : null, result: decision };
    },
    contended: contendedWrite(key, ' (runs of the drop promoting at once)'),
  });
}

/** The run that promotes a model, in the order runs of a drop take (run-order.ts). */
export type PromotingRun = Pick<RunState['run'], 'runId' | 'startedAt' | 'sequencer'>;

/**
 * Whether `candidate` replaces `current` as the drop's current model, and why. `promoting` is the
 * run whose report decides (by default the candidate's own; an adopted model's is the adopter).
 */
export function decide(
  candidate: ModelSummary,
  current: CurrentModel | null,
  rule?: PromoteRule,
  promoting: PromotingRun = runOf(candidate),
): Decision {
  if (current === null) return { promoted: true, reason: 'the drop had no current model', previous: null };
  if (current.model_id === candidate.model_id) {
    return { promoted: true, reason: "it is the drop's current model", previous: current.previous };
  }
  const previous = summaryOfCurrent(current);
  const verdict = (promoted: boolean, reason: string): Decision => ({ promoted, reason, previous });
  const currentRun = {
    run_id: current.run_id,
    started_at: current.run_started_at,
    sequencer: current.run_sequencer,
  };
  if (isNewerRun(currentRun, promoting)) {
    const which = `model ${current.model_id} of run ${current.run_id}, which started later`;
    return verdict(false, `${which}, stays current: no model replaces a later run's`);
  }
  if (rule === undefined)
    return verdict(true, 'train.json has no "promote": every new model becomes current');
  const { metric, min_delta: minDelta } = rule;
  const [mine, theirs] = [candidate.metrics[metric], current.metrics[metric]];
  const other = `model ${current.model_id}`;
  if (typeof mine !== 'number')
    return verdict(false, `it reports no "${metric}" (promote.metric), so ${other} stays current`);
  if (typeof theirs !== 'number') return verdict(true, `the current ${other} reports no "${metric}" to beat`);
  const delta = difference(mine, theirs);
  const beats = delta > 0 && delta >= minDelta;
  const compared = `${metric} ${String(mine)} ${beats ? 'beats' : 'does not beat'} ${String(theirs)} of ${other}`;
  if (beats) return verdict(true, `${compared} by ${String(delta)} (promote.min_delta ${String(minDelta)})`);
  const margin = minDelta > 0 ? `at least ${String(minDelta)}` : 'any margin';
  return verdict(
    false,
    `${compared} by ${margin} (promote.min_delta; the difference is ${String(delta)}), so ${other} stays current`,
  );
}

/**
 * Why the run's best model must not become current whatever it scores, or null: a newer
 * train.json took the drop over, or the model was adopted from a run of other settings (a resume
 * after train.json changed), so it is not what the drop's train.json asks for.
 */
function notCurrentBecause(
  state: RunState,
  best: ModelDocument,
  supersededBy: NewerRun | null,
): string | null {
  if (supersededBy !== null)
    return `a newer train.json of the drop (run ${supersededBy.runId}) took over, so this run's model does not become current`;
  const from = state.config?.resumeFrom;
  if (
    from?.paidModelId !== best.model.id ||
    from.configFingerprint === undefined ||
    state.config === undefined
  )
    return null;
  if (from.configFingerprint === configFingerprint(state.config)) return null;
  return `it was trained for run ${from.runId}, whose train.json differed from this run's: it is kept, but does not become current`;
}

/** A model that must not become current: kept and recorded, current.json left as it is. */
function givesWay(current: CurrentModel | null, reason: string): Decision {
  return { promoted: false, reason, previous: current === null ? null : summaryOfCurrent(current) };
}

function summaryOfCurrent(current: CurrentModel): ModelSummary {
  const { record: _record, promoted_at: _at, previous: _previous, ...summary } = current;
  return summary;
}

function runOf(model: ModelSummary): PromotingRun {
  const order = { runId: model.run_id, startedAt: model.run_started_at };
  return model.run_sequencer === undefined ? order : { ...order, sequencer: model.run_sequencer };
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

function summaryOf({ model, run }: ModelDocument): ModelSummary {
  const { id, encoder, created_at, metrics } = model;
  const ids = {
    model_id: id,
    run_id: run.run_id,
    run_started_at: run.started_at,
    ...(run.sequencer === undefined ? {} : { run_sequencer: run.sequencer }),
  };
  return { ...ids, encoder, created_at, metrics: metrics ?? {} };
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
