import { afterEach, describe, expect, it } from 'vitest';
import type { AslDefinition, AslState } from '../../local/emulator/definition.js';
import { retryable, RunError } from '../../lambdas/core/errors/index.js';
import type { RunInput } from '../../lambdas/core/state/index.js';
import { withExecutionArn, type ExecutionInput } from '../../lambdas/trigger/start-execution.js';
import { asLambda } from '../../local/emulator/lambda-invoke.js';
import {
  LOCAL_STATE_MACHINE_ARN,
  LocalStateMachine,
  type Execution,
  type ExecutionEvent,
  type ExecutionOutcome,
  type LocalStateMachineOptions,
} from '../../local/emulator/state-machine.js';
import { withTimeout } from '../../testkit/timeout.js';
import { historyEventsOf } from '../helpers/history.js';
import { whenDone } from '../helpers/local-execution.js';

/** Bound on every wait for an execution: the definitions here run in milliseconds. */
const WAIT_MS = 5_000;

const machines: LocalStateMachine[] = [];
afterEach(async () => {
  await within(Promise.all(machines.splice(0).map((machine) => machine.stopAll())), 'stopAll in afterEach');
});

function machine(
  definition: AslDefinition,
  tasks: LocalStateMachineOptions['tasks'] = {},
  options: Pick<LocalStateMachineOptions, 'waitMs' | 'retryPauseMs'> = {},
): LocalStateMachine {
  const created = new LocalStateMachine({ definition, tasks, ...options });
  machines.push(created);
  return created;
}

function task(name: string, fields: Partial<AslState> = {}): AslState {
  return { Type: 'Task', Resource: `arn:aws:lambda:us-east-1:123456789012:function:${name}`, ...fields };
}

function input(drop: string): ExecutionInput {
  const run: RunInput = {
    runId: `${drop}-run`,
    bucket: 'bucket',
    drop,
    key: `inbox/${drop}/train.json`,
    etag: 'etag',
    startedAt: '2026-03-01T12:00:00.000Z',
  };
  return { run };
}

/** `input(drop)` as execution `name` runs with it: the execution's ARN added to the run. */
function asStarted(name: string, drop: string): ExecutionInput {
  return withExecutionArn(input(drop), LOCAL_STATE_MACHINE_ARN, name);
}

function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  return withTimeout(promise, what, ms);
}

/** Resolves with the first event of execution `name` that `matches`. */
function nextEvent(
  machine: LocalStateMachine,
  name: string,
  matches: (event: ExecutionEvent) => boolean,
): Promise<ExecutionEvent> {
  return within(
    new Promise((resolve) => {
      const onEvent = (execution: Execution, event: ExecutionEvent): void => {
        if (execution.name !== name || !matches(event)) return;
        machine.off('event', onEvent);
        resolve(event);
      };
      machine.on('event', onEvent);
    }),
    `an event of ${name}`,
  );
}

function entered(stateName: string): (event: ExecutionEvent) => boolean {
  return (event) => event.type === 'StateEntered' && event.state.name === stateName;
}

/** Pass -> Task -> end: the task adds to the state what it was given. */
const PASS_THEN_TASK: AslDefinition = {
  StartAt: 'Prepare',
  States: {
    Prepare: { Type: 'Pass', Result: { ready: true }, ResultPath: '$.prepared', Next: 'Work' },
    Work: task('Work', { ResultPath: '$.work', End: true }),
  },
};

/** A Wait of an hour, then a Task; parks an execution until stopped. */
const LONG_WAIT: AslDefinition = {
  StartAt: 'Park',
  States: {
    Park: { Type: 'Wait', Seconds: 3600, Next: 'Work' },
    Work: task('Work', { ResultPath: '$.work', End: true }),
  },
};

describe('LocalStateMachine', () => {
  describe('start', () => {
    it('runs the definition with each Task answered by its function, and succeeds with the output', async () => {
      const given: unknown[] = [];
      const sm = machine(PASS_THEN_TASK, {
        Work: (state) => {
          given.push(state);
          return Promise.resolve({ done: 1 });
        },
      });
      expect(await sm.start('first', input('reviews'))).toMatchObject({
        outcome: 'running',
        executionArn: 'arn:aws:states:us-east-1:123456789012:execution:hopper-local:first',
      });
      const outcome = await within(whenDone(sm, 'first'), 'first');
      expect(given).toEqual([{ ...asStarted('first', 'reviews'), prepared: { ready: true } }]);
      expect(outcome).toEqual({
        status: 'SUCCEEDED',
        output: { ...asStarted('first', 'reviews'), prepared: { ready: true }, work: { done: 1 } },
      });
      expect(sm.execution('first')?.input.run.executionArn).toBe(
        'arn:aws:states:us-east-1:123456789012:execution:hopper-local:first',
      );
    });

    it("keeps the execution's name, input and start time", async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve(0) });
      const before = Date.now();
      await sm.start('kept', input('a'));
      const execution = sm.execution('kept');
      expect(execution).toMatchObject({ name: 'kept', input: input('a') });
      expect(execution?.startedAt).toBeGreaterThanOrEqual(before);
      expect(execution?.startedAt).toBeLessThanOrEqual(Date.now());
      expect(sm.execution('other')).toBeUndefined();
      await within(execution!.done, 'kept');
    });

    it("answers a name it has started by StartExecution's rule, and runs nothing again", async () => {
      let calls = 0;
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      const sm = machine(PASS_THEN_TASK, {
        Work: async () => {
          calls += 1;
          await released;
          return calls;
        },
      });
      const started: Execution[] = [];
      sm.on('started', (execution) => started.push(execution));
      const first = await sm.start('same', input('a'));
      expect(first).toMatchObject({ outcome: 'running' });
      await nextEvent(sm, 'same', entered('Work'));
      // Open, the same input: the open execution again (an idempotent start); other input: refused.
      expect(await sm.start('same', input('a'))).toEqual(first);
      expect(await sm.start('same', input('b'))).toEqual({ outcome: 'already_exists' });
      release();
      const outcome = await within(whenDone(sm, 'same'), 'same');
      // Closed: refused whatever the input.
      expect(await sm.start('same', input('a'))).toEqual({ outcome: 'already_exists' });
      expect(await sm.start('same', input('c'))).toEqual({ outcome: 'already_exists' });
      expect(calls).toBe(1);
      expect(started.map((execution) => execution.name)).toEqual(['same']);
      expect(sm.execution('same')?.input).toEqual(asStarted('same', 'a'));
      expect(sm.executions()).toHaveLength(1);
      expect(outcome).toMatchObject({ status: 'SUCCEEDED', output: { work: 1 } });
    });

    it('runs executions of different names side by side', async () => {
      const sm = machine(PASS_THEN_TASK, {
        Work: (state) => Promise.resolve((state as ExecutionInput).run.drop),
      });
      await sm.start('one', input('a'));
      await sm.start('two', input('b'));
      expect(sm.executions().map((execution) => execution.name)).toEqual(['one', 'two']);
      const outcomes = await within(Promise.all([whenDone(sm, 'one'), whenDone(sm, 'two')]), 'one and two');
      expect(outcomes.map((outcome) => (outcome.status === 'SUCCEEDED' ? outcome.output : null))).toEqual([
        expect.objectContaining({ work: 'a' }),
        expect.objectContaining({ work: 'b' }),
      ]);
    });
  });

  describe('whenDone', () => {
    it('waits for an execution that starts later', async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve('late') });
      let settled = false;
      const waiting = whenDone(sm, 'later').finally(() => (settled = true));
      await sm.start('other', input('other'));
      await within(whenDone(sm, 'other'), 'other');
      expect(settled).toBe(false);
      await sm.start('later', input('later'));
      expect(await within(waiting, 'later')).toMatchObject({ status: 'SUCCEEDED', output: { work: 'late' } });
      expect(sm.listenerCount('started')).toBe(0);
    });

    it('gives the outcome of an execution that has ended already', async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve(7) });
      await sm.start('ended', input('a'));
      const outcome = await within(whenDone(sm, 'ended'), 'ended');
      expect(await whenDone(sm, 'ended')).toBe(outcome);
    });

    it('rejects with the reason when its signal aborts, and stops listening', async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve(0) });
      const stop = new AbortController();
      const waiting = whenDone(sm, 'never', stop.signal);
      stop.abort(new Error('gave up'));
      await expect(within(waiting, 'never')).rejects.toThrow('gave up');
      expect(sm.listenerCount('started')).toBe(0);
    });

    it('rejects at once for a signal aborted already, and names the execution for a reason that is no Error', async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve(0) });
      await expect(whenDone(sm, 'never', AbortSignal.abort(new Error('too late')))).rejects.toThrow(
        'too late',
      );
      const stop = new AbortController();
      const waiting = whenDone(sm, 'unnamed', stop.signal);
      stop.abort('no reason');
      await expect(within(waiting, 'unnamed')).rejects.toThrow('stopped waiting for unnamed');
    });
  });

  describe('nextStarted', () => {
    it('resolves with the next matching execution, not one started before, and hands it every event from the first', async () => {
      const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve('done') });
      await sm.start('before', input('same'));
      await within(whenDone(sm, 'before'), 'before');
      const events: ExecutionEvent[] = [];
      const next = sm.nextStarted((execution) => execution.input.run.drop === 'same', {
        onEvent: (event) => events.push(event),
      });
      await sm.start('other', input('other'));
      await sm.start('after', input('same'));
      const execution = await within(next, 'after');
      expect(execution.name).toBe('after');
      await within(execution.done, 'after done');
      expect(events[0]?.type).toBe('ExecutionStarted');
      expect(events.at(-1)?.type).toBe('ExecutionSucceeded');
      expect(events.filter((event) => event.type === 'StateEntered')).toHaveLength(2);
      // Once the execution has ended nothing is left listening for it.
      expect(sm.listenerCount('started')).toBe(0);
      expect(sm.listenerCount('event')).toBe(0);
      expect(sm.listenerCount('done')).toBe(0);
    });
  });

  describe('outcomes', () => {
    it("fails with a Fail state's Error and Cause", async () => {
      const sm = machine({
        StartAt: 'Decide',
        States: {
          Decide: {
            Type: 'Choice',
            Choices: [{ Variable: '$.run.drop', StringEquals: 'bad', Next: 'Refuse' }],
            Default: 'Accept',
          },
          Refuse: { Type: 'Fail', Error: 'Hopper.Refused', Cause: 'the drop is bad' },
          Accept: { Type: 'Succeed' },
        },
      });
      await sm.start('bad', input('bad'));
      await sm.start('good', input('good'));
      expect(await within(whenDone(sm, 'bad'), 'bad')).toEqual({
        status: 'FAILED',
        error: 'Hopper.Refused',
        cause: 'the drop is bad',
      });
      expect(await within(whenDone(sm, 'good'), 'good')).toEqual({
        status: 'SUCCEEDED',
        output: asStarted('good', 'good'),
      });
    });

    it("fails with a Task's error name and its Lambda cause", async () => {
      const thrown = new RunError('no_credits', 'buy credits');
      const sm = machine(PASS_THEN_TASK, { Work: asLambda(() => Promise.reject(thrown), 5) });
      await sm.start('broke', input('a'));
      expect(await within(whenDone(sm, 'broke'), 'broke')).toEqual({
        status: 'FAILED',
        error: 'Hopper.Failed',
        cause: JSON.stringify({ errorType: 'Hopper.Failed', errorMessage: 'no_credits: buy credits' }),
      });
    });

    it('succeeds with a null output (an execution may end with null; that is not a stop)', async () => {
      const sm = machine(
        { StartAt: 'Work', States: { Work: task('Work', { End: true }) } },
        {
          Work: () => Promise.resolve(null),
        },
      );
      await sm.start('null', input('a'));
      expect(await within(whenDone(sm, 'null'), 'null')).toEqual({ status: 'SUCCEEDED', output: null });
    });

    it('is ABORTED for a running execution after stopAll, which waits for it to end', async () => {
      const sm = machine(LONG_WAIT, { Work: () => Promise.resolve('never reached') });
      const outcomes: ExecutionOutcome[] = [];
      sm.on('done', (_execution, outcome) => outcomes.push(outcome));
      await sm.start('parked', input('a'));
      await nextEvent(sm, 'parked', entered('Park'));
      const started = Date.now();
      await within(sm.stopAll(), 'stopAll');
      expect(Date.now() - started).toBeLessThan(WAIT_MS);
      expect(outcomes).toEqual([{ status: 'ABORTED' }]);
      expect(await whenDone(sm, 'parked')).toEqual({ status: 'ABORTED' });
      // The name stays taken, as a stopped execution's does in Step Functions.
      expect(await sm.start('parked', input('a'))).toEqual({ outcome: 'already_exists' });
    });

    it('stops every running execution and leaves ended ones as they were', async () => {
      const sm = machine(LONG_WAIT, { Work: () => Promise.resolve(0) });
      const quick = machine(PASS_THEN_TASK, { Work: () => Promise.resolve(0) });
      await quick.start('ended', input('x'));
      await within(whenDone(quick, 'ended'), 'ended');
      await within(quick.stopAll(), 'stopAll of ended');
      expect(await whenDone(quick, 'ended')).toMatchObject({ status: 'SUCCEEDED' });

      await sm.start('a', input('a'));
      await sm.start('b', input('b'));
      await Promise.all([nextEvent(sm, 'a', entered('Park')), nextEvent(sm, 'b', entered('Park'))]);
      await within(sm.stopAll(), 'stopAll');
      expect(await whenDone(sm, 'a')).toEqual({ status: 'ABORTED' });
      expect(await whenDone(sm, 'b')).toEqual({ status: 'ABORTED' });
    });
  });

  describe("'event'", () => {
    it('is emitted for each execution with its own events, all of them before its done', async () => {
      const sm = machine(PASS_THEN_TASK, {
        Work: (state) => Promise.resolve((state as ExecutionInput).run.drop),
      });
      const events = new Map<string, ExecutionEvent[]>();
      const eventsAtDone = new Map<string, number>();
      sm.on('event', (execution, event) => {
        events.set(execution.name, [...(events.get(execution.name) ?? []), event]);
      });
      sm.on('done', (execution) => eventsAtDone.set(execution.name, events.get(execution.name)?.length ?? 0));
      await sm.start('one', input('a'));
      await sm.start('two', input('b'));
      await within(Promise.all([whenDone(sm, 'one'), whenDone(sm, 'two')]), 'one and two');

      for (const [name, drop] of [
        ['one', 'a'],
        ['two', 'b'],
      ] as const) {
        const own = events.get(name) ?? [];
        expect(own.map((event) => event.type)).toEqual([
          'ExecutionStarted',
          'StateEntered',
          'StateExited',
          'StateEntered',
          'StateExited',
          'ExecutionSucceeded',
        ]);
        expect(own[0]).toMatchObject({ type: 'ExecutionStarted', input: input(drop) });
        expect(own.at(-1)).toMatchObject({ type: 'ExecutionSucceeded', output: { work: drop } });
        expect(eventsAtDone.get(name)).toBe(own.length);
      }
    });
  });

  describe('overrides', () => {
    it('waits waitMs in every Wait state instead of its seconds', async () => {
      const sm = machine(
        {
          StartAt: 'Park',
          States: {
            Park: { Type: 'Wait', Seconds: 3600, Next: 'ParkByPath' },
            ParkByPath: { Type: 'Wait', SecondsPath: '$.seconds', Next: 'Work' },
            Work: task('Work', { ResultPath: '$.work', End: true }),
          },
        },
        { Work: () => Promise.resolve('after the waits') },
        { waitMs: 0 },
      );
      const started = Date.now();
      await sm.start('waits', { ...input('a'), seconds: 7200 } as ExecutionInput);
      expect(await within(whenDone(sm, 'waits'), 'waits')).toMatchObject({
        status: 'SUCCEEDED',
        output: { work: 'after the waits' },
      });
      expect(Date.now() - started).toBeLessThan(WAIT_MS);
    });

    it('keeps the definition’s wait without waitMs', async () => {
      const sm = machine(LONG_WAIT, { Work: () => Promise.resolve(0) });
      await sm.start('parked', input('a'));
      await nextEvent(sm, 'parked', entered('Park'));
      let ended = false;
      void whenDone(sm, 'parked').then(() => (ended = true));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(ended).toBe(false);
    });

    it('retries at once with retryPauseMs 0, whatever the Retry interval', async () => {
      let calls = 0;
      const sm = machine(
        {
          StartAt: 'Work',
          States: {
            Work: task('Work', {
              Retry: [
                { ErrorEquals: ['Hopper.Retryable'], IntervalSeconds: 3600, MaxAttempts: 3, BackoffRate: 2 },
              ],
              End: true,
            }),
          },
        },
        {
          Work: asLambda(async () => {
            calls += 1;
            if (calls < 3) throw retryable('service_unavailable', `attempt ${String(calls)}`);
            return Promise.resolve({ attempts: calls });
          }, 5),
        },
        { retryPauseMs: 0 },
      );
      const retried: ExecutionEvent[] = [];
      sm.on('event', (_execution, event) => {
        if (event.type === 'StateRetried') retried.push(event);
      });
      const started = Date.now();
      await sm.start('flaky', input('a'));
      expect(await within(whenDone(sm, 'flaky'), 'flaky')).toEqual({
        status: 'SUCCEEDED',
        output: { attempts: 3 },
      });
      expect(retried).toHaveLength(2);
      expect(Date.now() - started).toBeLessThan(WAIT_MS);
    });

    it("fails with the Task's error once the retries run out", async () => {
      let calls = 0;
      const sm = machine(
        {
          StartAt: 'Work',
          States: {
            Work: task('Work', {
              Retry: [{ ErrorEquals: ['Hopper.Retryable'], IntervalSeconds: 3600, MaxAttempts: 2 }],
              End: true,
            }),
          },
        },
        {
          Work: asLambda(() => {
            calls += 1;
            return Promise.reject(retryable('service_unavailable', 'still down'));
          }, 5),
        },
        { retryPauseMs: 0 },
      );
      await sm.start('down', input('a'));
      expect(await within(whenDone(sm, 'down'), 'down')).toMatchObject({
        status: 'FAILED',
        error: 'Hopper.Retryable',
      });
      expect(calls).toBe(3);
    });
  });
});

describe('history events: what Step Functions would record (test/helpers/history.ts)', () => {
  /** The history events of the execution `name` of `sm`, counted from its events as they come. */
  function historyOf(sm: LocalStateMachine, name: string): { count: number } {
    const history = { count: 0 };
    sm.on('event', (execution, event) => {
      if (execution.name === name) history.count += historyEventsOf(event);
    });
    return history;
  }

  /** Work retried twice on E, then caught to a Fail state. */
  const RETRIED_THEN_CAUGHT: AslDefinition = {
    StartAt: 'Work',
    States: {
      Work: task('Work', {
        Retry: [{ ErrorEquals: ['E'], MaxAttempts: 2, IntervalSeconds: 1 }],
        Catch: [{ ErrorEquals: ['States.ALL'], Next: 'Failed', ResultPath: '$.failure' }],
        End: true,
      }),
      Failed: { Type: 'Fail', Error: 'X', Cause: 'y' },
    },
  };

  it('a Pass and a Task that succeed: 9 (started, Pass 2, Task entered, 3 for its attempt, exited, succeeded)', async () => {
    const sm = machine(PASS_THEN_TASK, { Work: () => Promise.resolve({ done: 1 }) });
    const history = historyOf(sm, 'counted');
    sm.startExecution('counted', input('d'));
    const execution = sm.execution('counted');
    await within(execution?.done ?? Promise.reject(new Error('not started')), 'counted');
    expect(history.count).toBe(9);
  });

  it('a Task tried three times, then caught to a Fail state: 14 (3 attempts of 3 events, no event for the retries or the catch)', async () => {
    const sm = machine(
      RETRIED_THEN_CAUGHT,
      {
        Work: () => {
          const error = new Error('failing');
          error.name = 'E';
          return Promise.reject(error);
        },
      },
      { retryPauseMs: 0 },
    );
    const history = historyOf(sm, 'retried');
    sm.startExecution('retried', input('d'));
    const execution = sm.execution('retried');
    const outcome = await within(execution?.done ?? Promise.reject(new Error('not started')), 'retried');
    expect(outcome).toMatchObject({ status: 'FAILED', error: 'X' });
    // ExecutionStarted, TaskStateEntered, 3 x (LambdaFunctionScheduled, Started, Failed),
    // TaskStateExited, FailStateEntered, ExecutionFailed.
    expect(history.count).toBe(14);
  });
});
