/**
 * Every execution of this local mode with its whole event history, kept for the console (the
 * interpreter hands each event out once; LocalStateMachine re-emits it and forgets it). Tells
 * its listeners which run changed, so the page can refresh just that.
 */
import { EventEmitter } from 'node:events';
import { listedRunState, type ListedRunState, type RunState } from '../../lambdas/core/state/index.js';
import { describeFailure, parseCodedMessage } from '../../lambdas/core/errors/index.js';
import type {
  Execution,
  ExecutionEvent,
  ExecutionOutcome,
  LocalStateMachine,
} from '../emulator/state-machine.js';

export interface LoggedRun {
  readonly execution: Execution;
  readonly events: ExecutionEvent[];
  outcome: ExecutionOutcome | null;
  /** When the execution ended (ms), once it has. */
  endedAt: number | null;
}

/** What the run list shows of one run. */
export interface RunSummary {
  readonly runId: string;
  readonly drop: string;
  readonly state: ListedRunState;
  /** The state machine's state the run is in (running) or ended in. */
  readonly currentState: string | null;
  readonly step: number | null;
  readonly nextAction: string | null;
  readonly attempts: number;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  /** `execution`: run by this local mode (history known); `status`: known from its status file only. */
  readonly source: 'execution' | 'status';
}

export class RunLog extends EventEmitter<{ change: [runId: string] }> {
  readonly #runs = new Map<string, LoggedRun>();
  readonly #detach: () => void;

  constructor(stateMachine: LocalStateMachine) {
    super();
    const onStarted = (execution: Execution): void => {
      this.#runs.set(execution.name, { execution, events: [], outcome: null, endedAt: null });
      this.emit('change', execution.name);
    };
    const onEvent = (execution: Execution, event: ExecutionEvent): void => {
      this.#runs.get(execution.name)?.events.push(event);
      this.emit('change', execution.name);
    };
    const onDone = (execution: Execution, outcome: ExecutionOutcome): void => {
      const run = this.#runs.get(execution.name);
      if (run !== undefined) {
        run.outcome = outcome;
        run.endedAt = Date.now();
      }
      this.emit('change', execution.name);
    };
    stateMachine.on('started', onStarted);
    stateMachine.on('event', onEvent);
    stateMachine.on('done', onDone);
    this.#detach = () => {
      stateMachine.off('started', onStarted);
      stateMachine.off('event', onEvent);
      stateMachine.off('done', onDone);
    };
  }

  run(runId: string): LoggedRun | undefined {
    return this.#runs.get(runId);
  }

  runs(): LoggedRun[] {
    return [...this.#runs.values()];
  }

  close(): void {
    this.#detach();
    this.removeAllListeners();
  }
}

/** The summary of a run from its own history. */
export function summarize(run: LoggedRun): RunSummary {
  const { execution, events, outcome, endedAt } = run;
  let currentState: string | null = null;
  let latest: RunState | null = null;
  let finishedAt: string | null = null;
  for (const event of events) {
    if ('state' in event) {
      currentState = event.state.name;
      latest = asRunState(event.state.output) ?? asRunState(event.state.input) ?? latest;
    }
    if (event.type === 'ExecutionSucceeded' || event.type === 'ExecutionFailed') {
      finishedAt = new Date(event.timestamp).toISOString();
    }
  }
  const record = latest?.model ?? latest?.dataset;
  const report = asRunState(outcome !== null && 'output' in outcome ? outcome.output : null)?.report;
  return {
    runId: execution.name,
    drop: execution.input.run.drop,
    state: outcome === null ? 'running' : listedRunState(outcome.status, report?.outcome),
    currentState,
    step: record?.step ?? null,
    nextAction: record?.nextAction ?? null,
    attempts: latest?.model?.attempts ?? 0,
    startedAt: execution.input.run.startedAt,
    finishedAt: finishedAt ?? (endedAt === null ? null : new Date(endedAt).toISOString()),
    error: errorOf(outcome, latest),
    source: 'execution',
  };
}

/** The report step's error (the status file's), else the execution's own, as code and message. */
function errorOf(
  outcome: ExecutionOutcome | null,
  latest: RunState | null,
): { code: string; message: string } | null {
  if (outcome === null || !('error' in outcome)) return null;
  if (latest?.report?.error != null) return latest.report.error;
  const text = describeFailure(outcome.error, outcome.cause);
  const coded = parseCodedMessage(text);
  return coded === null ? { code: outcome.error, message: text } : { code: coded.code, message: coded.text };
}

function asRunState(value: unknown): RunState | null {
  return typeof value === 'object' && value !== null && 'run' in value ? (value as RunState) : null;
}
