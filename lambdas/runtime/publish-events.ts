/**
 * The steps' side of run events: validate_drop announces the run (Started), the report ends it
 * (Succeeded or Failed), and makes sure Started went out first, so a run whose validate_drop
 * never got as far as the bus (a crash, a timeout, the bus down) still has both.
 */
import { publishOnce, type PublishContext, type PublishResult } from '../records/events/event-bus.js';
import { messageOf } from '../core/errors/errors.js';
import { runEndedEvent, runStartedEvent, type RunEnd } from '../records/events/events.js';
import type { StepEnv } from './handler.js';
import type { RunState } from '../core/state/state.js';

function publishContext(state: RunState, env: StepEnv): PublishContext {
  const { runtime } = env;
  return {
    s3: runtime.s3,
    bucket: state.run.bucket,
    bus: runtime.events,
    now: () => runtime.now(),
    warn: (message, extra) => {
      runtime.logger.warn(message, extra);
    },
  };
}

/**
 * Started, by validate_drop: a failure is logged and the step goes on, since the report puts
 * Started again before the run's end event (a run is not failed for want of its first event).
 */
export async function announceRun(state: RunState, env: StepEnv): Promise<void> {
  try {
    await publishOnce(publishContext(state, env), 'started', runStartedEvent(state));
  } catch (error) {
    env.runtime.logger.warn('the run started event was not put; the report will put it', {
      error: messageOf(error),
    });
  }
}

/**
 * Started (unless it went out already), then Succeeded or Failed, finished at `finishedAt` (the
 * final status's time); throws when either fails.
 */
export async function announceRunEnd(state: RunState, end: RunEnd, env: StepEnv): Promise<PublishResult> {
  const context = publishContext(state, env);
  await publishOnce(context, 'started', runStartedEvent(state));
  return publishOnce(context, end.report.outcome, runEndedEvent(state, end));
}
