/**
 * Step Functions' limits in local mode's state machine (local/emulator/limits.ts): the
 * synthesized definition, with scripted Tasks, fails as AWS fails it once a state's input or
 * output passes 256 KiB (States.DataLimitExceeded, not caught into Report) or its history passes
 * 25,000 events; and a payload at the limit goes through.
 */
import { describe, expect, it } from 'vitest';
import type { DatasetSlot, RunConfig } from '../../lambdas/core/state/index.js';
import {
  DATA_LIMIT_EXCEEDED,
  HISTORY_LIMIT_ERROR,
  MAX_HISTORY_EVENTS,
  MAX_PAYLOAD_BYTES,
  payloadBytes,
} from '../../local/emulator/limits.js';
import { synthesizeLocalDefinition } from '../infra/helpers.js';
import { executeLocally, SCRIPTED_CONFIG, SCRIPTED_RUN } from '../helpers/local-execution.js';
import { datasetSlotOf } from '../helpers/fixtures.js';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { RunError } from '../../lambdas/core/errors/index.js';

const { definition } = synthesizeLocalDefinition();

/** A config whose name pads ValidateDrop's output (the whole state) to `bytes`. */
function configForOutput(bytes: number): RunConfig {
  const config: RunConfig = { ...SCRIPTED_CONFIG, name: '' };
  // The input local mode gives it: the run with its execution's ARN (state-machine.ts).
  const arn = 'arn:aws:states:us-east-1:123456789012:execution:hopper-local:test-execution';
  const base = payloadBytes({ run: { ...SCRIPTED_RUN, executionArn: arn }, config });
  return { ...config, name: 'x'.repeat(bytes - base) };
}

const startOver: DatasetSlot = datasetSlotOf({
  id: 'ds_1',
  status: 'read',
  nextAction: 'start_over',
  waitSeconds: 0,
});

/** The Tasks called, by name, and a run that ends at DatasetUnreadable after CreateDataset. */
function scripted(config: RunConfig) {
  const calls: string[] = [];
  const handlers = {
    ValidateDrop: () => {
      calls.push('ValidateDrop');
      return config;
    },
    CreateDataset: () => {
      calls.push('CreateDataset');
      return startOver;
    },
    Report: () => {
      calls.push('Report');
      return { outcome: 'failed', error: { code: 'dataset_unreadable', message: 'x' } };
    },
  };
  return { calls, handlers };
}

describe("a state's input or output over 256 KiB", () => {
  it('fails the execution with States.DataLimitExceeded, which no Catch takes: nothing runs after', async () => {
    const { calls, handlers } = scripted(configForOutput(MAX_PAYLOAD_BYTES + 1));
    const execution = await executeLocally(definition, { run: SCRIPTED_RUN }, handlers);
    expect(execution.error?.name).toBe(DATA_LIMIT_EXCEEDED);
    expect(execution.error?.message).toContain(
      `the output of ValidateDrop is ${String(MAX_PAYLOAD_BYTES + 1)} bytes`,
    );
    expect(calls).toEqual(['ValidateDrop']);
  });

  it('at exactly 256 KiB a state passes, and the next that adds to it is over', async () => {
    const { calls, handlers } = scripted(configForOutput(MAX_PAYLOAD_BYTES));
    const execution = await executeLocally(definition, { run: SCRIPTED_RUN }, handlers);
    expect(calls).toEqual(['ValidateDrop', 'CreateDataset']);
    expect(execution.error?.name).toBe(DATA_LIMIT_EXCEEDED);
    expect(execution.error?.message).toContain('the output of CreateDataset');
  });

  it('a state well inside the limit runs on to its report', async () => {
    const { calls, handlers } = scripted(configForOutput(MAX_PAYLOAD_BYTES - 4_096));
    const execution = await executeLocally(definition, { run: SCRIPTED_RUN }, handlers);
    expect(calls).toEqual(['ValidateDrop', 'CreateDataset', 'Report']);
    expect(execution.error?.name).not.toBe(DATA_LIMIT_EXCEEDED);
  });

  it('counts bytes of UTF-8, not characters', () => {
    expect(payloadBytes({ name: 'é' })).toBe(Buffer.byteLength('{"name":"é"}'));
    expect(payloadBytes({ name: 'é' })).toBe(13);
  });
});

const waiting: DatasetSlot = datasetSlotOf({
  id: 'ds_1',
  status: 'read',
  nextAction: 'wait',
  waitSeconds: 1,
});

/** A run whose dataset is never ready: after CreateDataset, PollDataset is `poll`, round after round. */
function neverReady(poll: () => DatasetSlot, report: () => unknown = () => ({ outcome: 'failed' })) {
  return executeLocally(
    definition,
    { run: SCRIPTED_RUN },
    {
      ValidateDrop: () => configForOutput(1_000),
      CreateDataset: () => waiting,
      PollDataset: poll,
      Report: report,
    },
  );
}

describe('a history over 25,000 events', () => {
  it('fails the execution, bounded: a dataset that is never ready polls until the history is full', async () => {
    let polls = 0;
    const execution = await neverReady(() => {
      polls += 1;
      // Bounded: the limit ends it long before this (each poll is 9 events of history).
      if (polls > 5_000) throw new Error('the history limit did not stop the execution');
      return waiting;
    });
    expect(execution.error?.name).toBe(HISTORY_LIMIT_ERROR);
    expect(execution.error?.message).toContain(String(MAX_HISTORY_EVENTS));
    // WaitForDataset (entered, exited), PollDataset (5), RouteDataset (2): 9 events a poll.
    expect(polls).toBeGreaterThan(Math.floor((MAX_HISTORY_EVENTS - 20) / 9) - 2);
    expect(polls).toBeLessThanOrEqual(Math.ceil(MAX_HISTORY_EVENTS / 9));
  }, 120_000);
});

describe("Hopper's loop backstop keeps a run inside the history limit", () => {
  it('a run that polls MAX_LOOP_ROUNDS_PER_RUN times, each poll retried once, still ends in its report', async () => {
    let polls = 0;
    let reported = false;
    const throttled = Object.assign(new Error('throttled'), { name: 'Lambda.TooManyRequestsException' });
    let attempt = 0;
    const execution = await neverReady(
      () => {
        // Each poll fails once first (a retry: 3 more events), the worst a transient error adds.
        attempt += 1;
        if (attempt % 2 === 1) throw throttled;
        polls += 1;
        // As nextPoll does (lambdas/core/schedule/polling.ts): past the backstop, history_limit.
        if (polls >= MAX_LOOP_ROUNDS_PER_RUN)
          throw new RunError('history_limit', 'the run went round its loops too often');
        return waiting;
      },
      () => {
        reported = true;
        return { outcome: 'failed', error: { code: 'history_limit', message: 'x' } };
      },
    );
    expect(polls).toBe(MAX_LOOP_ROUNDS_PER_RUN);
    expect(reported).toBe(true);
    expect(execution.error?.name).not.toBe(HISTORY_LIMIT_ERROR);
  }, 120_000);
});
