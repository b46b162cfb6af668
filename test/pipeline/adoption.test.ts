/**
 * The one rule for whether a run spends or adopts (lambdas/ownership/adoption.ts), and what the
 * status records before start_training pays (lambdas/core/state/training-intent.ts). Pure.
 */
import { describe, expect, it } from 'vitest';
import {
  adoptsWorkOf,
  siblingToAdopt,
  spendDecision,
  type SpendFacts,
} from '../../lambdas/ownership/index.js';
import { trainingIntentOf, type RunState } from '../../lambdas/core/state/index.js';
import { modelFileKey } from '../../lambdas/storage/keys.js';
import { configOf, datasetSlotOf, modelSlotOf, stateOf } from '../helpers/fixtures.js';

const RUN = { runId: 'new', startedAt: '2026-01-02T00:00:00.000Z' };
const model = (status: string, createdAt = '2026-01-02T01:00:00.000Z', next = 'none') => ({
  id: 'm-1',
  status,
  next_action: next,
  created_at: createdAt,
});
const facts = (overrides: Partial<SpendFacts>): SpendFacts => ({
  newest: undefined,
  run: RUN,
  otherRuns: [],
  supersededBy: null,
  ...overrides,
});

describe('spendDecision: start_training adopts, stops or may start', () => {
  it('adopts a model that holds a credit, even when superseded; never starts while one does', () => {
    for (const status of ['queued', 'training']) {
      const decision = spendDecision(
        facts({ newest: model(status, undefined, 'wait') as SpendFacts['newest'] }),
      );
      expect(decision).toEqual({ act: 'adopt' });
    }
    const newer = { runId: 'newer', startedAt: '2026-01-03T00:00:00.000Z' };
    const training = model('training', undefined, 'wait') as SpendFacts['newest'];
    expect(spendDecision(facts({ newest: training, supersededBy: newer }))).toEqual({ act: 'adopt' });
  });

  it('stops a superseded run that holds nothing; starts otherwise (a failed newest model gave its credit back)', () => {
    const newer = { runId: 'newer', startedAt: '2026-01-03T00:00:00.000Z' };
    expect(spendDecision(facts({ supersededBy: newer }))).toEqual({ act: 'stop', newer });
    expect(spendDecision(facts({}))).toEqual({ act: 'start' });
    const failed = model('failed', undefined, 'retry') as SpendFacts['newest'];
    expect(spendDecision(facts({ newest: failed }))).toEqual({ act: 'start' });
  });

  it("names the run whose credit an adopted model is: the run of the drop that names it, else the resumed run's when older", () => {
    const training = model('training', undefined, 'wait') as SpendFacts['newest'];
    const naming = [{ run_id: 'older', model_id: 'm-1', paid_model: null }];
    // Created after this run started, by a run still at it when this one adopted its dataset.
    expect(
      spendDecision(facts({ newest: training, otherRuns: naming, resumeFrom: { runId: 'older' } })),
    ).toEqual({
      act: 'adopt',
      paidBy: 'older',
    });
    const earlier = model('training', '2026-01-01T00:00:00.000Z', 'wait') as SpendFacts['newest'];
    expect(spendDecision(facts({ newest: earlier, resumeFrom: { runId: 'resumed' } }))).toEqual({
      act: 'adopt',
      paidBy: 'resumed',
    });
    // This run's own start whose answer was lost: its own credit.
    expect(spendDecision(facts({ newest: training, resumeFrom: { runId: 'resumed' } }))).toEqual({
      act: 'adopt',
    });
    const itself = [{ run_id: 'new', model_id: 'm-1', paid_model: null }];
    expect(spendDecision(facts({ newest: training, otherRuns: itself }))).toEqual({ act: 'adopt' });
  });
});

describe('siblingToAdopt: another run with the same settings that trained another dataset', () => {
  const sibling = {
    run_id: 'older',
    state: 'running' as const,
    updated_at: '2026-01-02T00:05:00.000Z',
    model_id: 'm-older',
    dataset_id: 'ds-older',
    config_fingerprint: 'same',
  };
  it('running, superseded, failed or interrupted; succeeded only when it ended after this run started', () => {
    const found = { runId: 'older', modelId: 'm-older' };
    expect(siblingToAdopt([sibling], RUN, 'same', 'ds-new')).toEqual(found);
    for (const state of ['superseded', 'failed', 'interrupted'] as const) {
      expect(
        siblingToAdopt(
          [{ ...sibling, state, updated_at: '2025-01-01T00:00:00.000Z' }],
          RUN,
          'same',
          'ds-new',
        ),
      ).toEqual(found);
    }
    expect(siblingToAdopt([{ ...sibling, state: 'succeeded' }], RUN, 'same', 'ds-new')).toEqual(found);
    // Succeeded before this train.json came: a retrain, asked for.
    const before = { ...sibling, state: 'succeeded' as const, updated_at: '2026-01-01T00:00:00.000Z' };
    expect(siblingToAdopt([before], RUN, 'same', 'ds-new')).toBeUndefined();
    // Ended within the second of the upload (the event's time is to the second): it may have
    // overlapped it, so its model is adopted rather than paid for again.
    const sameSecond = { ...sibling, state: 'succeeded' as const, updated_at: '2026-01-02T00:00:00.700Z' };
    expect(siblingToAdopt([sameSecond], RUN, 'same', 'ds-new')).toEqual(found);
    expect(siblingToAdopt([sibling], RUN, 'other', 'ds-new')).toBeUndefined();
    expect(siblingToAdopt([{ ...sibling, model_id: null }], RUN, 'same', 'ds-new')).toBeUndefined();
    expect(siblingToAdopt([sibling], RUN, 'same', 'ds-older')).toBeUndefined();
    expect(siblingToAdopt([{ ...sibling, run_id: 'new' }], RUN, 'same', 'ds-new')).toBeUndefined();
  });

  it("spendDecision adopts the sibling's model while it holds a credit, after this dataset's own and a superseded stop", () => {
    const holding = {
      runId: 'older',
      model: { status: 'done', next_action: 'download' },
    } as SpendFacts['sibling'];
    expect(spendDecision(facts({ sibling: holding }))).toEqual({ act: 'adopt-sibling', paidBy: 'older' });
    const gone = {
      runId: 'older',
      model: { status: 'failed', next_action: 'none' },
    } as SpendFacts['sibling'];
    expect(spendDecision(facts({ sibling: gone }))).toEqual({ act: 'start' });
    const newer = { runId: 'newer', startedAt: '2026-01-03T00:00:00.000Z' };
    expect(spendDecision(facts({ sibling: holding, supersededBy: newer }))).toEqual({ act: 'stop', newer });
    const own = model('training', undefined, 'wait') as SpendFacts['newest'];
    expect(spendDecision(facts({ sibling: holding, newest: own }))).toEqual({ act: 'adopt' });
  });
});

describe('adoptsWorkOf: which earlier run of the drop a new run with the same settings adopts', () => {
  const intent = { dataset_id: 'ds', encoder: null, attempt: 1 };
  const run = {
    state: 'interrupted' as const,
    dataset_id: 'ds',
    paid_model: null,
    training_intent: null,
    config_fingerprint: 'same',
    // Still taking files: only paid work or an intent is adopted.
    next_action: 'upload_files' as const,
  };
  it('a paid model (running, failed or interrupted), else an intent (running or interrupted), same settings only', () => {
    const paid = { ...run, paid_model: { id: 'm', status: 'training' } };
    expect(adoptsWorkOf(paid, 'same')).toBe('paid_model');
    expect(adoptsWorkOf({ ...paid, state: 'running' }, 'same')).toBe('paid_model');
    expect(adoptsWorkOf({ ...paid, state: 'failed' }, 'same')).toBe('paid_model');
    expect(adoptsWorkOf({ ...paid, state: 'succeeded' }, 'same')).toBeNull();
    expect(adoptsWorkOf(paid, 'other')).toBeNull();
    expect(adoptsWorkOf({ ...run, training_intent: intent }, 'same')).toBe('training_intent');
    expect(adoptsWorkOf({ ...run, training_intent: intent, state: 'running' }, 'same')).toBe(
      'training_intent',
    );
    expect(adoptsWorkOf({ ...run, training_intent: intent, state: 'failed' }, 'same')).toBeNull();
    expect(adoptsWorkOf(run, 'same')).toBeNull();
    expect(adoptsWorkOf({ ...paid, dataset_id: null }, 'same')).toBeNull();
  });

  it('else a dataset past its uploads (running or interrupted): a same-settings redrop makes no second dataset', () => {
    for (const next of ['wait', 'structure', 'pick_decisions', 'label_examples', 'start_training'] as const) {
      expect(adoptsWorkOf({ ...run, next_action: next }, 'same')).toBe('dataset');
      expect(adoptsWorkOf({ ...run, next_action: next, state: 'running' }, 'same')).toBe('dataset');
      expect(adoptsWorkOf({ ...run, next_action: next, state: 'failed' }, 'same')).toBeNull();
      expect(adoptsWorkOf({ ...run, next_action: next, state: 'superseded' }, 'same')).toBeNull();
      expect(adoptsWorkOf({ ...run, next_action: next }, 'other')).toBeNull();
    }
    // The earlier run may be uploading to it right now; nor is there anything to take yet.
    expect(adoptsWorkOf({ ...run, state: 'running' }, 'same')).toBeNull();
    expect(adoptsWorkOf({ ...run, next_action: null, state: 'running' }, 'same')).toBeNull();
    expect(adoptsWorkOf({ ...run, next_action: 'wait', dataset_id: null }, 'same')).toBeNull();
  });
});

describe('trainingIntentOf: what the status write before start_training says it is about to start', () => {
  const at = (slots: Omit<RunState, 'run'>) =>
    trainingIntentOf(stateOf('b', { config: configOf(), ...slots }, { drop: 'd' }));
  it('the first training of a dataset ready to train; none while it is not', () => {
    expect(at({ dataset: datasetSlotOf({ id: 'ds', nextAction: 'start_training' }) })).toEqual({
      dataset_id: 'ds',
      encoder: null,
      attempt: 1,
    });
    expect(at({ dataset: datasetSlotOf({ nextAction: 'label_examples' }) })).toBeNull();
    expect(at({ dataset: datasetSlotOf({ nextAction: 'wait' }) })).toBeNull();
    expect(at({})).toBeNull();
  });

  it('the next attempt after a failed one with attempts left; a sweep’s next encoder; none once a model trains', () => {
    const dataset = datasetSlotOf({ id: 'ds', nextAction: 'start_training' });
    const failed = modelSlotOf({ status: 'failed', nextAction: 'retry', attempts: 1, retryLeft: true });
    expect(at({ dataset, model: failed })).toEqual({ dataset_id: 'ds', encoder: 'enc-small', attempt: 2 });
    expect(at({ dataset, model: { ...failed, retryLeft: false } })).toBeNull();
    expect(at({ dataset, model: modelSlotOf() })).toBeNull();
    const copied = modelSlotOf({
      id: 'm1',
      status: 'done',
      nextAction: 'download',
      nextEncoder: 'enc-large',
    });
    const copy = { modelKey: modelFileKey('d', 'm1'), recordKey: 'r', bytes: 1 };
    expect(at({ dataset, model: copied, copy })).toEqual({
      dataset_id: 'ds',
      encoder: 'enc-large',
      attempt: 1,
    });
    expect(at({ dataset, model: copied })).toBeNull();
  });
});
