/**
 * A Task that runs out of time, as AWS reports it and as the definition treats it. A Lambda past
 * its timeout fails its invocation with Sandbox.Timedout, which Step Functions sees as the Task's
 * error; a Task past its own TimeoutSeconds (a Lambda that never answered) fails with
 * States.Timeout. The definition retries either once (LAMBDA_DEATH_ERRORS), then catches it into
 * Report, which fails the run with step_timeout. Through the synthesized state machine: local
 * mode with the real handler bundles and a short Lambda timeout for one Task, and the
 * interpreter with the definition's TimeoutSeconds shortened for the other.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LAMBDA_TIMEOUT_ERROR, TASK_TIMEOUT_ERROR } from '../../lambdas/core/errors/index.js';
import { loadLocalDefinition, type AslDefinition } from '../../local/emulator/definition.js';
import { LocalStateMachine, type ExecutionEvent } from '../../local/emulator/state-machine.js';
import type { TaskName } from '../../infra/tasks.js';
import { dropAndRun, RUN_TIMEOUT_MS, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { reviewsDrop } from '../helpers/fixtures.js';
import { withTimeout } from '../../testkit/timeout.js';

const fixture = useLocalMode();

/** Holds the first `count` requests of `client` for `ms` before they are sent. */
function slowRequests(client: S3Client, count: number, ms: number): void {
  let held = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (held < count) {
        held += 1;
        await sleep(ms);
      }
      return next(args);
    },
    { step: 'initialize', name: 'slowRequestsForTest' },
  );
}

/** The errors a state failed with, attempt by attempt (the interpreter's StateFailed events). */
function failuresOf(events: readonly ExecutionEvent[], state: TaskName): string[] {
  return events.flatMap((event) =>
    event.type === 'StateFailed' && event.state.name === state ? [event.Error] : [],
  );
}

/**
 * A drop run with ValidateDrop given a 1 s Lambda timeout and its first `slowed` S3 requests held
 * 1.5 s each: each attempt that meets one runs over the timeout.
 */
async function runOverTimeout(slowed: number, drop: string) {
  const local = await fixture.start({ lambdaTimeoutSeconds: { ValidateDrop: 1 } });
  const s3 = local.functionS3('ValidateDrop');
  if (s3 === undefined) throw new Error('no S3 client for ValidateDrop');
  slowRequests(s3, slowed, 1_500);
  return await dropAndRun(local, drop, reviewsDrop());
}

describe('a Lambda past its timeout: Sandbox.Timedout', () => {
  it('the Task fails with it, the definition retries it once, and the retry finishes the run', async () => {
    const run = await runOverTimeout(1, 'timeout-once');

    expect(failuresOf(run.events, 'ValidateDrop')).toEqual([LAMBDA_TIMEOUT_ERROR]);
    expect(run.events.filter((event) => event.type === 'StateRetried')).toHaveLength(1);
    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(run.status).toMatchObject({ state: 'succeeded', error: null });
  });

  it('every attempt past it: retried once, then caught and reported as step_timeout', async () => {
    const run = await runOverTimeout(2, 'timeout-twice');

    expect(failuresOf(run.events, 'ValidateDrop')).toEqual([LAMBDA_TIMEOUT_ERROR, LAMBDA_TIMEOUT_ERROR]);
    expect(statesEntered(run.events)).toEqual(['ValidateDrop', 'Report', 'RunSucceeded', 'RunFailed']);
    expect(run.outcome).toMatchObject({ status: 'FAILED', error: 'step_timeout' });
    expect(run.status).toMatchObject({ state: 'failed', error: { code: 'step_timeout' } });
    expect(run.status?.error?.message).toContain(LAMBDA_TIMEOUT_ERROR);
  });
});

describe('a Task past its own TimeoutSeconds (its Lambda never answered): States.Timeout', () => {
  /** The synthesized definition with ValidateDrop's TimeoutSeconds at 1 s, as deployed otherwise. */
  function withShortTaskTimeout(definition: AslDefinition): AslDefinition {
    const states = { ...definition.States };
    states.ValidateDrop = { ...states.ValidateDrop, TimeoutSeconds: 1 } as (typeof states)['ValidateDrop'];
    return { ...definition, States: states };
  }

  it('the definition retries it once, then catches it into Report as the failure', async () => {
    const { definition } = loadLocalDefinition();
    let attempts = 0;
    let reported: { readonly failure?: { readonly Error: string } } | undefined;
    const machine = new LocalStateMachine({
      definition: withShortTaskTimeout(definition),
      tasks: {
        // A Lambda that never answers: only the Task's own timeout ends the wait.
        ValidateDrop: () => {
          attempts += 1;
          return new Promise(() => undefined);
        },
        Report: (input) => {
          reported = input as typeof reported;
          return Promise.resolve({
            outcome: 'failed',
            error: { code: 'step_timeout', message: 'timed out' },
          });
        },
      },
      retryPauseMs: 0,
    });
    const events: ExecutionEvent[] = [];
    machine.on('event', (_execution, event) => events.push(event));
    machine.startExecution('never-answers', {
      run: {
        runId: 'never-answers',
        bucket: 'bucket',
        drop: 'drop',
        key: 'inbox/drop/train.json',
        etag: 'etag',
        startedAt: '2026-01-01T00:00:00.000Z',
      },
    });
    const outcome = await withTimeout(
      machine.execution('never-answers')?.done ?? Promise.reject(new Error('not started')),
      'the execution did not end',
      RUN_TIMEOUT_MS,
    );

    expect(attempts).toBe(2);
    expect(failuresOf(events, 'ValidateDrop')).toEqual([TASK_TIMEOUT_ERROR, TASK_TIMEOUT_ERROR]);
    expect(reported?.failure?.Error).toBe(TASK_TIMEOUT_ERROR);
    expect(outcome).toMatchObject({ status: 'FAILED', error: 'step_timeout' });
  });
});
