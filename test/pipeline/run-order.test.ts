/**
 * Which run of a drop is the newer (lambdas/core/state/run-order.ts), from the S3 events that start
 * them (lambdas/trigger/start-execution.ts runInputFromEvent): by S3's `sequencer` for one key,
 * whatever the times say, else by the time, else by the run id. Events shaped as the EventBridge
 * "Object Created" event of the S3 user guide ("EventBridge event message structure").
 */
import { describe, expect, it } from 'vitest';
import { compareSequencers, isLaterRun, type RunInput } from '../../lambdas/core/state/index.js';
import { isNewerRun } from '../../lambdas/records/status/index.js';
import { runInputFromEvent, type TriggerEvent } from '../../lambdas/trigger/start-execution.js';

/** The user guide's example event, for inbox/reviews/train.json, with `object` fields given. */
function objectCreated(
  time: string,
  object: { etag: string; sequencer?: string; 'version-id'?: string },
): TriggerEvent {
  return {
    source: 'aws.s3',
    'detail-type': 'Object Created',
    time,
    detail: {
      bucket: { name: 'DOC-EXAMPLE-BUCKET1' },
      object: { key: 'inbox/reviews/train.json', ...object },
    },
  };
}

function runOf(event: TriggerEvent): RunInput {
  const run = runInputFromEvent(event, 0);
  if (run === null) throw new Error('no run');
  return run;
}

describe('sequencers', () => {
  it('compare as hex after left-padding to equal length, in either case', () => {
    expect(compareSequencers('617f08299329d189', '617f0829932a0000')).toBeLessThan(0);
    expect(compareSequencers('0100', 'FF')).toBeGreaterThan(0);
    expect(compareSequencers('ff', 'FF')).toBe(0);
    expect(compareSequencers('00ABC', 'abc')).toBe(0);
  });
});

describe('the newer of two runs of a drop', () => {
  it('two uploads in one second (EventBridge times to the second): the later sequencer wins, whatever the run ids', () => {
    const first = runOf(
      objectCreated('2021-11-12T00:00:00Z', {
        etag: 'ffff',
        sequencer: '617f08299329d189',
        'version-id': 'b',
      }),
    );
    const second = runOf(
      objectCreated('2021-11-12T00:00:00Z', {
        etag: '0000',
        sequencer: '617f0829932a0000',
        'version-id': 'a',
      }),
    );
    expect(first.sequencer).toBe('617f08299329d189');
    expect(isLaterRun(second, first)).toBe(true);
    expect(isLaterRun(first, second)).toBe(false);
    // Whichever run id sorts higher: the sequencer decides before it.
    const flipped = { ...second, runId: `0${second.runId}` };
    expect(isLaterRun(flipped, first)).toBe(true);
  });

  it('a late delivery of an older upload stays older, even with a later time', () => {
    const older = runOf(objectCreated('2021-11-12T00:00:05Z', { etag: 'aa', sequencer: '0617F0829' }));
    const newer = runOf(objectCreated('2021-11-12T00:00:01Z', { etag: 'bb', sequencer: '617F082A0' }));
    expect(isLaterRun(newer, older)).toBe(true);
  });

  it('without a sequencer (an empty one, as local events had): the time, then the run id', () => {
    const early = runOf(objectCreated('2021-11-12T00:00:00.100Z', { etag: 'aa', sequencer: '' }));
    const late = runOf(objectCreated('2021-11-12T00:00:00.200Z', { etag: 'bb', sequencer: '' }));
    expect(early.sequencer).toBeUndefined();
    expect(isLaterRun(late, early)).toBe(true);
    expect(isLaterRun(early, late)).toBe(false);
    const tie = { ...late, startedAt: early.startedAt };
    expect(isLaterRun(tie, early)).toBe(tie.runId > early.runId);
    expect(isLaterRun(early, early)).toBe(false);
  });

  it('the status file follows it: a status of the later-sequenced run is newer than the other run', () => {
    const first = runOf(objectCreated('2021-11-12T00:00:00Z', { etag: 'ffff', sequencer: '0A' }));
    const second = runOf(objectCreated('2021-11-12T00:00:00Z', { etag: '0000', sequencer: '0B' }));
    const statusOfSecond = {
      run_id: second.runId,
      started_at: second.startedAt,
      sequencer: second.sequencer,
    };
    expect(isNewerRun(statusOfSecond, first)).toBe(true);
    // A status written before the field: the time and the run id, as before.
    expect(isNewerRun({ run_id: second.runId, started_at: second.startedAt }, first)).toBe(
      second.runId > first.runId,
    );
  });
});
