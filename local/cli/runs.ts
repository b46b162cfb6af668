/**
 * `hopper runs <drop>`: the drop's runs, newest first, with their outcome: the state machine's
 * executions (Step Functions' ListExecutions, or local mode's stand-in for it) whose names
 * begin with the drop (lambdas/trigger/start-execution.ts names them), each checked by its
 * input, with what each run's report kept in status/.runs/<drop>/<run id>.json: `superseded`
 * when a newer train.json of the drop took over, and the credits the run cost. Runs with a
 * record (or the drop's status file) but no execution listed are listed from those: a run cut
 * off by a restart of `hopper local --data-dir` (whose executions did not survive it), or one
 * older than Step Functions keeps.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand, paginateListExecutions, type SFNClient } from '@aws-sdk/client-sfn';
import {
  readRunRecord,
  readStatus,
  runRecordKeys,
  type RunStatus,
} from '../../lambdas/records/status/index.js';
import {
  executionNameDrop,
  isLaterRun,
  listedRunState,
  NAME_HASH_HEX,
  type ListedRunState,
} from '../../lambdas/core/state/index.js';
import { runRecordKey, runRecordsPrefix } from '../../lambdas/storage/keys.js';
import { executionArnOf } from '../../lambdas/core/state/index.js';
import { CommandError, EXIT, formatAge, json, limitFlag, table, type CommandSpec } from './command.js';
import { HOPPER_STATE_MACHINE_ENV, targetCommand, TARGET_FLAGS } from './target.js';

export const DEFAULT_RUNS = 20;
export const MAX_RUNS = 1000;
/** Pages of ListExecutions read at most (1000 executions each) while looking for a drop's runs. */
export const MAX_EXECUTION_PAGES = 20;

export const RUNS_SPEC: CommandSpec = {
  name: 'runs',
  usage: '<drop> [options]',
  about:
    "Lists the drop's runs, newest first: when each started, how long it took, its outcome (succeeded, failed with its error code, superseded by a newer train.json of the drop, interrupted by a stop of `hopper local`, running, timed out, stopped), the credits it cost and its model.",
  flags: { limit: limitFlag('runs', DEFAULT_RUNS, MAX_RUNS), ...TARGET_FLAGS },
  positionals: { min: 1, max: 1, what: 'drop', hint: 'hopper runs reviews' },
  exits: { 0: true, 1: true, 2: true },
};

export interface RunSummary {
  readonly run_id: string;
  readonly execution_arn: string;
  readonly outcome: ListedRunState;
  readonly started_at: string;
  readonly stopped_at: string | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  /** Credits the run's trainings cost (a failed one's came back); null until its report kept them. */
  readonly credits: number | null;
  readonly dataset_id: string | null;
  readonly model_id: string | null;
}

export const runRunsCommand = targetCommand(RUNS_SPEC, async (args, target, out, { now = Date.now }) => {
  const drop = args.positionals[0] ?? '';
  const limit = args.number('limit') ?? DEFAULT_RUNS;
  if (target.stateMachine === null) {
    throw new CommandError(
      'no_target',
      `no state machine to read runs from: eval the export lines \`hopper local\` prints (${HOPPER_STATE_MACHINE_ENV} is not set), or give --stack NAME`,
    );
  }
  const { runs, searchedAll } = await runsOf(target, target.stateMachine, drop, limit);
  if (!searchedAll) {
    out.stderr.write(
      `hopper runs: looked through the newest ${String(MAX_EXECUTION_PAGES * 1000)} executions only; older runs of "${drop}" are in the Step Functions console\n`,
    );
  }
  if (runs.length === 0) {
    throw new CommandError(
      'not_found',
      `${target.label} has no run of "${drop}": drop a folder into inbox/${drop}/, train.json last`,
    );
  }
  out.stdout.write(args.on('json') ? json(runs) : runsTable(runs, now()));
  return EXIT.succeeded;
});

type Records = { readonly s3: S3Client; readonly bucket: string };

/**
 * The drop's runs, newest first, at most `limit`; `searchedAll` is false when the listing stopped
 * at MAX_EXECUTION_PAGES with fewer runs found and executions left unread.
 */
async function runsOf(
  records: Records,
  { client: sfn, arn: stateMachineArn }: { readonly client: SFNClient; readonly arn: string },
  drop: string,
  limit: number,
): Promise<{ runs: RunSummary[]; searchedAll: boolean }> {
  // executionNameDrop leaves only [A-Za-z0-9_-], none of them special in a pattern.
  const name = new RegExp(`^${executionNameDrop(drop)}-[0-9a-f]{${String(NAME_HASH_HEX)}}$`);
  const kept = await recordedRuns(records, drop);
  const runs: OrderedRun[] = [];
  let pages = 0;
  let token: string | undefined;
  for await (const listed of paginateListExecutions({ client: sfn, pageSize: 1000 }, { stateMachineArn })) {
    for (const item of listed.executions ?? []) {
      if (runs.length >= limit) break;
      if (item.name === undefined || item.executionArn === undefined || !name.test(item.name)) continue;
      // Names keep 40 sanitised characters of the drop: the input tells drops apart for sure.
      const execution = await sfn.send(new DescribeExecutionCommand({ executionArn: item.executionArn }));
      if (dropOfInput(execution.input) !== drop) continue;
      const record = kept.delete(item.name) ? await runRecord(records, drop, item.name) : null;
      const outcome = listedRunState(execution.status, record?.state);
      runs.push({
        ...fromRecord(record),
        sequencer: record?.sequencer,
        run_id: item.name,
        execution_arn: item.executionArn,
        outcome,
        started_at: (execution.startDate ?? item.startDate ?? new Date(0)).toISOString(),
        stopped_at: (execution.stopDate ?? item.stopDate)?.toISOString() ?? null,
        error:
          execution.status === 'FAILED' || execution.status === 'TIMED_OUT'
            ? { code: execution.error ?? 'unknown', message: execution.cause ?? '' }
            : outcome === 'superseded'
              ? (record?.error ?? null)
              : null,
      });
    }
    token = listed.nextToken;
    if (++pages === MAX_EXECUTION_PAGES || runs.length >= limit) break;
  }
  runs.push(...(await unlistedRuns(records, drop, kept, runs, stateMachineArn)));
  runs.sort(newestFirst);
  const shown = runs.slice(0, limit).map(({ sequencer: _sequencer, ...run }) => run);
  return { runs: shown, searchedAll: runs.length >= limit || token === undefined };
}

/** A run as listed, with the sequencer that orders it (runs in one second are ordered by it). */
type OrderedRun = RunSummary & { readonly sequencer?: string | null | undefined };

/** Newest first, by the drop's run order (lambdas/core/state/run-order.ts). */
function newestFirst(a: OrderedRun, b: OrderedRun): number {
  const key = (run: OrderedRun) => ({
    runId: run.run_id,
    startedAt: run.started_at,
    sequencer: run.sequencer,
  });
  if (isLaterRun(key(a), key(b))) return -1;
  return isLaterRun(key(b), key(a)) ? 1 : 0;
}

/** The runs `kept` names (records no execution matched), and the status file's run if unlisted. */
async function unlistedRuns(
  records: Records,
  drop: string,
  kept: ReadonlySet<string>,
  listed: readonly RunSummary[],
  stateMachineArn: string,
): Promise<OrderedRun[]> {
  const found: RunStatus[] = [];
  for (const runId of kept) {
    const record = await runRecord(records, drop, runId);
    if (record !== null) found.push(record);
  }
  const status = await readStatus(records.s3, records.bucket, drop);
  const seen = new Set([...listed, ...found].map((run) => run.run_id));
  if (status !== null && !seen.has(status.run_id)) found.push(status);
  return found.map((run) => ({
    ...fromRecord(run),
    sequencer: run.sequencer,
    run_id: run.run_id,
    execution_arn: executionArnOf(stateMachineArn, run.run_id),
    outcome: run.state,
    started_at: run.started_at,
    stopped_at: run.finished_at,
    error: run.error,
  }));
}

function fromRecord(record: RunStatus | null): Pick<RunSummary, 'credits' | 'dataset_id' | 'model_id'> {
  return {
    credits: record?.summary?.credits ?? null,
    dataset_id: record?.dataset_id ?? null,
    model_id: record?.model_id ?? null,
  };
}

export function runsTable(runs: readonly RunSummary[], now: number): string {
  return table(
    ['RUN', 'STARTED', 'TOOK', 'OUTCOME', 'CREDITS', 'MODEL', 'ERROR'],
    runs.map((run) => [
      run.run_id,
      `${formatAge(now - Date.parse(run.started_at))} ago`,
      formatAge((run.stopped_at === null ? now : Date.parse(run.stopped_at)) - Date.parse(run.started_at)),
      run.outcome,
      run.credits === null ? '' : String(run.credits),
      run.model_id ?? '',
      run.outcome === 'superseded' ? '' : (run.error?.code ?? ''),
    ]),
  );
}

/** The run ids of the drop's records (status/.runs/<drop>/). */
async function recordedRuns(records: Records, drop: string): Promise<Set<string>> {
  const prefix = runRecordsPrefix(drop);
  const ids = new Set<string>();
  for await (const key of runRecordKeys(records.s3, records.bucket, drop))
    ids.add(key.slice(prefix.length, -'.json'.length));
  return ids;
}

/** What the run's report kept of it (status/.runs/<drop>/<run id>.json), or null without one. */
function runRecord(records: Records, drop: string, runId: string): Promise<RunStatus | null> {
  return readRunRecord(records.s3, records.bucket, runRecordKey(drop, runId));
}

function dropOfInput(input: string | undefined): string | undefined {
  try {
    const parsed = JSON.parse(input ?? '') as { run?: { drop?: unknown } };
    return typeof parsed.run?.drop === 'string' ? parsed.run.drop : undefined;
  } catch {
    return undefined;
  }
}
