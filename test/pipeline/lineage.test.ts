/**
 * Promotion and lineage (lambdas/steps/lineage.ts): the rule that decides whether a new model
 * replaces the drop's current one, and the conditional write of current.json against the real
 * local S3, with two runs' promotions interleaved on purpose: the one that read first writes last,
 * and must decide again on what the other wrote instead of overwriting it.
 */
import { describe, expect, it } from 'vitest';
import type { ModelSlot, PromoteRule, RunState } from '../../lambdas/core/state/index.js';
import type { ModelDocument } from '../../lambdas/steps/copy-model.js';
import {
  decide,
  promoteRunModels,
  type CurrentModel,
  type ModelSummary,
} from '../../lambdas/steps/lineage.js';
import { currentModelKey, modelFileKey, modelRecordKey } from '../../lambdas/storage/keys.js';
import { putJson, readJson } from '../../lambdas/storage/objects.js';
import { localS3Client } from '../../local/s3/local-s3.js';
import { usePipelineFixtures } from '../helpers/pipeline.js';
import { gate } from '../../testkit/timeout.js';
import { uniqueDrop, configOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

const summary = (id: string, metrics: Record<string, number>): ModelSummary => ({
  model_id: id,
  run_id: `run-${id}`,
  run_started_at: '2026-01-01T00:00:00.000Z',
  encoder: 'enc-small',
  created_at: '2026-01-01T00:00:00.000Z',
  metrics,
});
const currentOf = (id: string, metrics: Record<string, number>, previous: ModelSummary | null = null) => ({
  ...summary(id, metrics),
  // Its run started before the candidates' (summary's).
  run_started_at: '2025-12-31T00:00:00.000Z',
  record: `s3://b/models/d/${id}/model.json`,
  promoted_at: '2026-01-01T00:00:00.000Z',
  previous,
});
const F1: PromoteRule = { metric: 'f1', min_delta: 0 };

describe('decide: whether a new model replaces the current one', () => {
  const old = currentOf('old', { f1: 0.8 });
  it.each([
    ['the drop has no current model', null, { f1: 0.1 }, F1, true],
    ['no promote rule: every new model', old, { f1: 0.1 }, undefined, true],
    ['better on the metric', old, { f1: 0.81 }, F1, true],
    ['a tie does not beat it', old, { f1: 0.8 }, F1, false],
    ['worse', old, { f1: 0.79 }, F1, false],
    ['better, but by less than min_delta', old, { f1: 0.805 }, { metric: 'f1', min_delta: 0.01 }, false],
    ['better by exactly min_delta', old, { f1: 0.81 }, { metric: 'f1', min_delta: 0.01 }, true],
    ['the new model lacks the metric', old, { accuracy: 0.99 }, F1, false],
    ['the current model lacks the metric', currentOf('old', { accuracy: 0.5 }), { f1: 0.1 }, F1, true],
  ] as const)('%s', (_what, current: CurrentModel | null, metrics, rule, promoted) => {
    const decision = decide(summary('new', metrics), current, rule);
    expect(decision.promoted).toBe(promoted);
    expect(decision.previous?.model_id ?? null).toBe(current?.model_id ?? null);
    expect(decision.reason).not.toBe('');
  });

  it("a model of an earlier run never replaces a later run's, with promote or without, however much better", () => {
    const later = { ...currentOf('later', { f1: 0.8 }), run_started_at: '2026-01-02T00:00:00.000Z' };
    const earlier = summary('earlier', { f1: 0.9 });
    expect(decide(earlier, later)).toMatchObject({ promoted: false, previous: { model_id: 'later' } });
    expect(decide(earlier, later).reason).toContain('run run-later, which started later');
    expect(decide(earlier, later, F1)).toMatchObject({ promoted: false, previous: { model_id: 'later' } });
    expect(
      decide({ ...earlier, metrics: { f1: 0.99 } }, later, { metric: 'f1', min_delta: 0 }).promoted,
    ).toBe(false);
    // The runs' order, not the models': a later run's model replaces an earlier run's.
    expect(
      decide({ ...summary('next', {}), run_started_at: '2026-01-03T00:00:00.000Z' }, later).promoted,
    ).toBe(true);
    // An adopted model is an earlier run's, promoted by the run that adopted it: the newest.
    const adopter = { runId: 'run-adopter', startedAt: '2026-01-03T00:00:00.000Z' };
    expect(decide(earlier, later, F1, adopter).promoted).toBe(true);
    expect(decide(earlier, later, undefined, adopter).promoted).toBe(true);
  });

  it("runs whose train.json came in one second (EventBridge's time): the later sequencer's model stays current, whatever the run ids", () => {
    // run-a sorts after run-0 by id, but its upload came first (a smaller sequencer).
    const later = {
      ...currentOf('0', { f1: 0.8 }),
      run_started_at: '2026-01-01T00:00:00.000Z',
      run_sequencer: '00B2',
    };
    const earlier = { ...summary('a', { f1: 0.9 }), run_sequencer: '00A1' };
    expect(decide(earlier, later)).toMatchObject({ promoted: false, previous: { model_id: '0' } });
    const { record: _record, promoted_at: _at, previous: _previous, ...laterSummary } = later;
    const earlierCurrent = { ...currentOf('a', { f1: 0.9 }), ...earlier };
    expect(decide(laterSummary, earlierCurrent).promoted).toBe(true);
  });

  it('never compares a model with itself: the current one keeps the previous it had', () => {
    const previous = summary('older', { f1: 0.7 });
    const decision = decide(summary('old', { f1: 0.8 }), currentOf('old', { f1: 0.8 }, previous), F1);
    expect(decision).toMatchObject({ promoted: true, previous });
  });
});

describe('promoteRunModels: current.json written conditionally', () => {
  /** A run that copied model `id`; `promote: null` for a train.json without one (default F1). */
  async function copiedRun(
    bucket: string,
    drop: string,
    id: string,
    f1: number,
    options: { promote?: PromoteRule | null; startedAt?: string } = {},
  ): Promise<RunState> {
    const { promote = F1, startedAt = '2026-01-01T00:00:00.000Z' } = options;
    const config = configOf(promote === null ? {} : { promote });
    const state = stateOf(bucket, { config }, { drop, runId: `run-${id}`, startedAt });
    const record = {
      model: { id, encoder: 'enc-small', created_at: state.run.startedAt, metrics: { f1 } },
      run: { run_id: state.run.runId, started_at: startedAt },
    };
    await putJson(fixtures.s3().client, bucket, modelRecordKey(drop, id), record);
    const copy = { modelKey: modelFileKey(drop, id), recordKey: modelRecordKey(drop, id), bytes: 1 };
    return { ...state, model: { id, encoder: 'enc-small' } as ModelSlot, copy };
  }

  it('the run that read first and writes last decides again on what the other wrote: no update is lost', async () => {
    const { client, bucket, endpoint } = fixtures.s3();
    const drop = uniqueDrop();
    const worse = await copiedRun(bucket, drop, 'worse', 0.7);
    const better = await copiedRun(bucket, drop, 'better', 0.9);
    // The worse run's first write of current.json waits until the better run has written it.
    const slow = localS3Client(endpoint);
    const [released, atPut] = [gate(), gate()];
    let puts = 0;
    slow.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: string }).Key ?? '';
        if (context.commandName === 'PutObjectCommand' && key.endsWith('current.json') && puts++ === 0) {
          atPut.open();
          await released.opened;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdCurrentWrite' },
    );
    try {
      const worseDecided = promoteRunModels(slow, worse, Date.now());
      await atPut.opened;
      expect((await promoteRunModels(client, better, Date.now()))?.promotion).toMatchObject({
        promoted: true,
      });
      released.open();
      const lost = await worseDecided;
      // Its write lost the race (the object now existed), so it read current.json again.
      expect(puts).toBe(1);
      expect(lost?.promotion).toMatchObject({
        model_id: 'worse',
        promoted: false,
        previous_model_id: 'better',
      });
      expect(lost?.promotion.differences).toEqual({ f1: -0.2 });
      const current = (await readJson(client, bucket, currentModelKey(drop)))?.value as CurrentModel;
      expect(current).toMatchObject({ model_id: 'better', run_id: 'run-better', previous: null });
      const record = (await readJson(client, bucket, modelRecordKey(drop, 'worse')))?.value as ModelDocument;
      expect(record).toMatchObject({ previous: { model_id: 'better' }, promotion: { promoted: false } });
    } finally {
      slow.destroy();
    }
  });

  it('a report retried after its model became current: promoted, the same previous model, nothing rewritten', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    await promoteRunModels(client, await copiedRun(bucket, drop, 'first', 0.8), Date.now());
    const second = await copiedRun(bucket, drop, 'second', 0.85);
    const once = await promoteRunModels(client, second, Date.now());
    const written = await readJson(client, bucket, currentModelKey(drop));
    const again = await promoteRunModels(client, second, Date.now());
    expect(again?.promotion).toEqual(once?.promotion);
    expect(again?.promotion).toMatchObject({
      promoted: true,
      previous_model_id: 'first',
      differences: { f1: 0.05 },
    });
    expect((await readJson(client, bucket, currentModelKey(drop)))?.etag).toBe(written?.etag);
  });

  it.each([
    { promote: null, f1: 0.9, current: 'newer' },
    { promote: F1, f1: 0.7, current: 'newer' },
    { promote: F1, f1: 0.95, current: 'newer' },
  ])(
    'an older run reporting after a newer one (promote $promote, f1 $f1 against 0.8): $current stays current',
    async ({ promote, f1, current }) => {
      const { client, bucket } = fixtures.s3();
      const drop = uniqueDrop();
      const newer = await copiedRun(bucket, drop, 'newer', 0.8, {
        promote,
        startedAt: '2026-01-02T00:00:00.000Z',
      });
      const older = await copiedRun(bucket, drop, 'older', f1, { promote });
      await promoteRunModels(client, newer, Date.now());
      const late = await promoteRunModels(client, older, Date.now());
      expect(late?.promotion).toMatchObject({ promoted: current === 'older', previous_model_id: 'newer' });
      expect((await readJson(client, bucket, currentModelKey(drop)))?.value).toMatchObject({
        model_id: current,
      });
    },
  );

  it("a retried report keeps its first try's lineage whole: the promotion agrees with the previous model", async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const first = await copiedRun(bucket, drop, 'first', 0.8);
    const once = await promoteRunModels(client, first, Date.now());
    expect(once?.promotion).toMatchObject({ promoted: true, previous_model_id: null });
    // A later, better run becomes current before the first run's report is retried.
    const later = { startedAt: '2026-01-02T00:00:00.000Z' };
    await promoteRunModels(client, await copiedRun(bucket, drop, 'later', 0.9, later), Date.now());
    const written = await readJson(client, bucket, currentModelKey(drop));
    const again = await promoteRunModels(client, first, Date.now());
    expect(again?.promotion).toEqual(once?.promotion);
    const record = (await readJson(client, bucket, modelRecordKey(drop, 'first')))?.value as ModelDocument;
    expect(record).toMatchObject({ previous: null, promotion: { promoted: true } });
    expect((await readJson(client, bucket, currentModelKey(drop)))?.etag).toBe(written?.etag);
  });

  it("a resumed sweep's first model, current until its sweep's better one, never names itself as previous", async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    // The sweep's first run copied M1, which became current, and stopped (the credit budget).
    await promoteRunModels(client, await copiedRun(bucket, drop, 'M1', 0.8), Date.now());
    // The resumed run adopts M1 as the first encoder's outcome and copies M2 for the second.
    const resumed = await copiedRun(bucket, drop, 'M2', 0.9, { startedAt: '2026-01-02T00:00:00.000Z' });
    const first = { encoder: 'enc-a', outcome: 'copied', model_id: 'M1', attempts: 1, error: null } as const;
    const sweep = { encoders: ['enc-a', 'enc-b'], outcomes: [first] };
    const state = { ...resumed, model: { ...(resumed.model as ModelSlot), sweep } };

    const lineage = await promoteRunModels(client, state, Date.now());

    expect(lineage?.promotion).toMatchObject({ model_id: 'M2', promoted: true, previous_model_id: 'M1' });
    const m1 = (await readJson(client, bucket, modelRecordKey(drop, 'M1')))?.value as ModelDocument;
    expect(m1.previous).toBeNull();
    expect(m1.promotion).toMatchObject({ promoted: false });
    const m2 = (await readJson(client, bucket, modelRecordKey(drop, 'M2')))?.value as ModelDocument;
    expect(m2.previous).toMatchObject({ model_id: 'M1', differences: { f1: 0.1 } });
  });

  it("a superseded run's model is recorded but not promoted, whichever report comes first", async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = { runId: 'run-newer', startedAt: '2026-01-02T00:00:00.000Z' };
    const older = await copiedRun(bucket, drop, 'older', 0.9);
    const lineage = await promoteRunModels(client, older, Date.now(), newer);
    expect(lineage?.promotion).toMatchObject({ model_id: 'older', promoted: false, previous_model_id: null });
    expect(lineage?.promotion.reason).toContain('a newer train.json of the drop (run run-newer) took over');
    expect(await readJson(client, bucket, currentModelKey(drop))).toBeNull();
    expect((await readJson(client, bucket, modelRecordKey(drop, 'older')))?.value).toMatchObject({
      promotion: { promoted: false },
    });
    // The newer run's model, worse but the newest train.json's, becomes current.
    const own = await copiedRun(bucket, drop, 'newer', 0.7, { startedAt: newer.startedAt });
    expect((await promoteRunModels(client, own, Date.now()))?.promotion).toMatchObject({ promoted: true });
    expect((await readJson(client, bucket, currentModelKey(drop)))?.value).toMatchObject({
      model_id: 'newer',
    });
  });

  it('a run that copied no model promotes nothing', async () => {
    const { bucket } = fixtures.s3();
    const state = stateOf(bucket, { config: configOf() });
    expect(await promoteRunModels(fixtures.s3().client, state, Date.now())).toBeNull();
  });
});
