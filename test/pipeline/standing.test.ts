/**
 * A run's standing towards its drop (lambdas/ownership/standing.ts): owner while no newer
 * train.json's run holds the status file; then finishing while it holds a paid model, else giving
 * way; and a finishing run whose training failed (its credit back) gives way.
 */
import { describe, expect, it } from 'vitest';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import { standingOf, takenOverBy } from '../../lambdas/ownership/index.js';
import { modelSlotOf, stateOf } from '../helpers/fixtures.js';

type Found = Pick<RunStatus, 'run_id' | 'started_at' | 'sequencer'>;

const state = stateOf('bucket', {}, { drop: 'd', runId: 'run-1', startedAt: '2026-01-01T00:00:00.000Z' });
const own: Found = { run_id: 'run-1', started_at: '2026-01-01T00:00:00.000Z', sequencer: null };
const newer: Found = { run_id: 'run-2', started_at: '2026-01-01T00:00:05.000Z', sequencer: null };
const older: Found = { run_id: 'run-0', started_at: '2025-12-31T23:59:00.000Z', sequencer: null };
const training = { ...state, model: modelSlotOf({ status: 'training', nextAction: 'wait' }) };
const refunded = { ...state, model: modelSlotOf({ status: 'failed', nextAction: 'retry' }) };

describe('standingOf', () => {
  it.each([
    ['no status file yet', null, state, 'owner'],
    ['the file holds this run', own, state, 'owner'],
    ['the file holds an older run (this run has not written yet)', older, state, 'owner'],
    ['a newer run holds the file, nothing paid', newer, state, 'giving-way'],
    ['a newer run holds the file, a training under way', newer, training, 'finishing'],
    [
      'a newer run holds the file, the training failed and gave its credit back',
      newer,
      refunded,
      'giving-way',
    ],
  ] as const)('%s: %s', (_what, found, run, kind) => {
    expect(standingOf(found, run).kind).toBe(kind);
  });

  it('names the run that took over, and none while the run owns the drop', () => {
    expect(takenOverBy(standingOf(newer, training))).toEqual({
      runId: 'run-2',
      startedAt: '2026-01-01T00:00:05.000Z',
    });
    expect(takenOverBy(standingOf(own, training))).toBeNull();
  });

  it('orders two uploads in one second by the sequencer, not the run ids', () => {
    const first = stateOf(
      'bucket',
      {},
      { drop: 'd', runId: 'run-b', sequencer: '00A1', startedAt: newer.started_at },
    );
    const second: Found = { run_id: 'run-a', started_at: newer.started_at, sequencer: '00B2' };
    expect(standingOf(second, first).kind).toBe('giving-way');
    expect(standingOf({ ...second, sequencer: '0090' }, first).kind).toBe('owner');
  });
});
