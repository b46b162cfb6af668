/**
 * The console's runs: those this local mode ran (with their history, from the RunLog) and
 * those known only from a status file (earlier local modes kept in a data directory), newest
 * first, filtered by state and paged.
 */
import { describeFailure } from '../../lambdas/core/errors/index.js';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import type { ExecutionEvent } from '../emulator/state-machine.js';
import type { BucketView } from './bucket-view.js';
import { LISTED_RUN_STATES, type ListedRunState } from '../../lambdas/core/state/index.js';
import { summarize, type RunLog, type RunSummary } from './run-log.js';

export interface RunPage {
  /** Runs that pass the filter. */
  readonly total: number;
  /** Runs in each state, before the filter. */
  readonly counts: Readonly<Record<ListedRunState, number>>;
  readonly offset: number;
  readonly runs: readonly RunSummary[];
}

/** An event as the page shows it: a failed state's error already put in words. */
export type ShownEvent = ExecutionEvent & {
  /** For an event with an Error: the error as a person reads it (describeFailure). */
  readonly failure?: string;
};

export interface RunDetail {
  readonly summary: RunSummary;
  /** The execution's events, first to last (none for a run known from its status file only). */
  readonly events: readonly ShownEvent[];
  /** status/<drop>.json when it is this run's (a later run of the drop owns it otherwise). */
  readonly status: RunStatus | null;
  /** Where the run's model is in the bucket, once copied. */
  readonly model: { readonly modelId: string; readonly onnxKey: string; readonly recordKey: string } | null;
}

export class RunCatalogue {
  constructor(
    private readonly log: RunLog,
    private readonly bucket: BucketView,
  ) {}

  async all(): Promise<RunSummary[]> {
    const runs = new Map<string, RunSummary>();
    // Ended runs from their records (a later run of the drop took the status file), then the
    // status files (the latest run of each drop, maybe still going).
    for (const record of await this.bucket.records()) runs.set(record.run_id, summaryOfStatus(record));
    for (const status of await this.bucket.statuses()) runs.set(status.run_id, summaryOfStatus(status));
    // A run's own history knows more than its status file (and outlives it when the drop reruns).
    for (const logged of this.log.runs()) runs.set(logged.execution.name, summarize(logged));
    return [...runs.values()].sort(
      (a, b) => b.startedAt.localeCompare(a.startedAt) || b.runId.localeCompare(a.runId),
    );
  }

  async page(options: {
    offset: number;
    limit: number;
    state?: ListedRunState;
    drop?: string;
  }): Promise<RunPage> {
    const all = (await this.all()).filter((run) => options.drop === undefined || run.drop === options.drop);
    const inState = (state: ListedRunState): RunSummary[] => all.filter((run) => run.state === state);
    const counts = Object.fromEntries(LISTED_RUN_STATES.map((state) => [state, inState(state).length]));
    const chosen = options.state === undefined ? all : inState(options.state);
    return {
      total: chosen.length,
      counts: counts as RunPage['counts'],
      offset: options.offset,
      runs: chosen.slice(options.offset, options.offset + options.limit),
    };
  }

  async detail(runId: string): Promise<RunDetail | null> {
    const logged = this.log.run(runId);
    if (logged !== undefined) {
      const summary = summarize(logged);
      const status = await this.bucket.status(summary.drop);
      const own = status?.run_id === runId ? status : null;
      const events = logged.events.map(shownEvent);
      return { summary, events, status: own, model: modelOf(own, copyOf(logged.events)) };
    }
    const known = [...(await this.bucket.statuses()), ...(await this.bucket.records())];
    const status = known.find((candidate) => candidate.run_id === runId);
    if (status === undefined) return null;
    return { summary: summaryOfStatus(status), events: [], status, model: modelOf(status, undefined) };
  }
}

function summaryOfStatus(status: RunStatus): RunSummary {
  return {
    runId: status.run_id,
    drop: status.drop,
    state: status.state,
    currentState: null,
    step: status.step,
    nextAction: status.next_action,
    attempts: status.attempts,
    startedAt: status.started_at,
    finishedAt: status.finished_at,
    error: status.error,
    source: 'status',
  };
}

/** The model's keys: from the run's CopyModel output, else from its status file's s3:// URLs. */
function modelOf(
  status: RunStatus | null,
  copy: { modelKey: string; recordKey: string } | undefined,
): RunDetail['model'] {
  const onnxKey = copy?.modelKey ?? keyOf(status?.model?.onnx);
  const recordKey = copy?.recordKey ?? keyOf(status?.model?.record);
  if (onnxKey === undefined || recordKey === undefined) return null;
  const modelId = onnxKey.split('/').at(-2) ?? '';
  return { modelId, onnxKey, recordKey };
}

function copyOf(events: readonly ExecutionEvent[]): { modelKey: string; recordKey: string } | undefined {
  for (const event of events) {
    if (event.type !== 'StateExited' || event.state.name !== 'CopyModel') continue;
    const copy = (event.state.output as { copy?: { modelKey?: unknown; recordKey?: unknown } } | null)?.copy;
    if (typeof copy?.modelKey === 'string' && typeof copy.recordKey === 'string') {
      return { modelKey: copy.modelKey, recordKey: copy.recordKey };
    }
  }
  return undefined;
}

/** `s3://bucket/models/...` → `models/...` */
function keyOf(url: string | undefined): string | undefined {
  const match = url === undefined ? null : /^s3:\/\/[^/]+\/(.+)$/.exec(url);
  return match?.[1];
}

/** The page reads a failure in the words of lambdas/core/errors/lambda-error.ts, not its own. */
function shownEvent(event: ExecutionEvent): ShownEvent {
  if (!('Error' in event) || typeof event.Error !== 'string') return event;
  return { ...event, failure: describeFailure(event.Error, 'Cause' in event ? event.Cause : undefined) };
}
