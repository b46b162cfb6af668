/**
 * Local mode on a fast clock: each Wait state of the state machine sleeps a few milliseconds of
 * real time (`waitMs`), and the poll Task after it first moves the simulated service's clock by
 * the seconds the Wait was meant to sleep (its SecondsPath, `$.dataset.waitSeconds`,
 * `$.model.waitSeconds`, or `$.copy.waitSeconds` before a copy that was put off). A 7-day training then runs end to end in seconds, every poll on time
 * by the service's clock.
 */
import type { TaskName } from '../../infra/tasks.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import type { LocalModeOptions, LocalTask } from '../../local/emulator/local-mode.js';
import type { ServiceClock } from '../../local/service/domain/index.js';

/** A poll of the model: when (service clock) and what it found. */
export interface ModelPoll {
  readonly at: number;
  readonly nextAction: string;
}

export interface FastClock {
  /** For LocalModeOptions.wrapTask. */
  readonly wrapTask: NonNullable<LocalModeOptions['wrapTask']>;
  /** For LocalModeOptions.now: the handlers read the service's clock (Date.now until attached). */
  readonly now: () => number;
  /** The simulated service's clock, once local mode has started it. */
  attach(clock: ServiceClock): void;
  /** Every PollModel invocation so far, in order. */
  readonly modelPolls: ModelPoll[];
  /** The service clock at every CopyModel invocation so far, in order. */
  readonly copies: number[];
}

/** The slot whose `waitSeconds` the Wait before each poll Task sleeps. */
const SLOT_WAITED: Partial<Record<TaskName, 'dataset' | 'model' | 'copy'>> = {
  PollDataset: 'dataset',
  PollModel: 'model',
  CopyModel: 'copy',
};

export function fastClock(): FastClock {
  let clock: ServiceClock | undefined;
  const modelPolls: ModelPoll[] = [];
  const copies: number[] = [];
  const wrapTask = (name: TaskName, task: LocalTask): LocalTask => {
    const slot = SLOT_WAITED[name];
    if (slot === undefined) return task;
    return async (input) => {
      if (clock === undefined) throw new Error('fastClock: attach() the service clock before a run');
      // Resource-style Lambda Tasks (payloadResponseOnly): the state in, the slot out.
      const state = input as RunState;
      const waited = state[slot];
      // A done copy has no wait; a copy put off, or a poll's slot, says how long.
      clock.advance((waited !== undefined && 'waitSeconds' in waited ? waited.waitSeconds : 0) * 1000);
      const at = clock.now();
      if (name === 'CopyModel') copies.push(at);
      const result = await task(input);
      if (name === 'PollModel') {
        const found = (result as { nextAction?: string }).nextAction ?? '?';
        modelPolls.push({ at, nextAction: found });
      }
      return result;
    };
  };
  return {
    wrapTask,
    now: () => clock?.now() ?? Date.now(),
    attach(serviceClock) {
      clock = serviceClock;
    },
    modelPolls,
    copies,
  };
}
