/**
 * The pipeline's own words, each declared once: its steps (the Task each runs as, the slot it
 * writes, the slots it needs) and the stops (the Pass states that end a run on a next_action it
 * cannot go on from, and their codes). The service's words (next_action values) are in
 * lambdas/service-client/contract.ts (NEXT_ACTIONS), Hopper's run error codes in errors.ts.
 *
 * Everything that lists steps or stops is typed from here (`Record<StepName, …>`, exhaustive
 * switches), so adding one makes the compiler name every place to change; docs/pipeline.md,
 * "How to add", lists them. Plain data with type-only imports: the stack (infra/tasks.ts,
 * infra/state-machine.ts) and local mode read it without loading any step's code.
 */
import type { RunErrorCode } from '../errors/codes.js';

/** A slot of the run state a Task writes (`$.<slot>`). */
export type SlotName = 'config' | 'dataset' | 'model' | 'copy' | 'report';

/** What a step is: the Task it runs as, where its result goes, and what it reads before it. */
export interface StepDeclaration {
  /** The Task state's name in the definition (local mode binds handlers by it). */
  readonly task: string;
  /** Where the definition puts the step's result: `$.<slot>`. */
  readonly slot: SlotName;
  /**
   * The slots earlier Tasks must have written: the handler wrapper checks them (a missing one is
   * a broken definition: internal_error) and the step's `run` gets them typed as present.
   */
  readonly needs: readonly SlotName[];
}

/**
 * Every step, by Hopper's name for it (the status file's `hopper_step`, the usage summary's
 * `steps`, the metrics' Step dimension), in the order a run meets them.
 */
export const STEPS = {
  validate_drop: { task: 'ValidateDrop', slot: 'config', needs: [] },
  create_dataset: { task: 'CreateDataset', slot: 'dataset', needs: ['config'] },
  upload_files: { task: 'UploadFiles', slot: 'dataset', needs: ['config', 'dataset'] },
  poll_dataset: { task: 'PollDataset', slot: 'dataset', needs: ['dataset'] },
  structure: { task: 'Structure', slot: 'dataset', needs: ['config', 'dataset'] },
  pick_decisions: { task: 'PickDecisions', slot: 'dataset', needs: ['config', 'dataset'] },
  label_examples: { task: 'LabelExamples', slot: 'dataset', needs: ['config', 'dataset'] },
  start_training: { task: 'StartTraining', slot: 'model', needs: ['config', 'dataset'] },
  poll_model: { task: 'PollModel', slot: 'model', needs: ['model'] },
  copy_model: { task: 'CopyModel', slot: 'copy', needs: ['model'] },
  report: { task: 'Report', slot: 'report', needs: [] },
} as const satisfies Record<string, StepDeclaration>;

export type StepName = keyof typeof STEPS;
/** A Task state of the definition: one per step. */
export type TaskName = (typeof STEPS)[StepName]['task'];
/** The slot step N writes. */
export type SlotOf<N extends StepName> = (typeof STEPS)[N]['slot'];
/** The slots step N needs. */
export type NeedsOf<N extends StepName> = (typeof STEPS)[N]['needs'][number];

export const STEP_NAMES = Object.keys(STEPS) as StepName[];

/**
 * The Pass states that end a run on a next_action it cannot go on from, and the code each puts
 * at `$.stop`. Every code is a run error code; the report words each (lambdas/steps/report.ts).
 */
export const STOPS = {
  DatasetUnreadable: 'dataset_unreadable',
  DatasetExpired: 'dataset_expired',
  UnexpectedNextAction: 'unsupported_next_action',
  AttemptsExhausted: 'training_failed',
  ModelFilesGone: 'model_files_gone',
} as const satisfies Record<string, RunErrorCode>;

export type StopName = keyof typeof STOPS;

/**
 * How a run stands, or how it ended: the status file's `state`, the run events', `hopper status`
 * and `runs`', and the console's. `superseded`: a newer train.json of the drop took over;
 * `interrupted`: local mode stopped while the run went on (local/emulator/interrupted-runs.ts).
 */
export const RUN_PHASES = ['running', 'succeeded', 'failed', 'superseded', 'interrupted'] as const;
export type RunPhase = (typeof RUN_PHASES)[number];

/** What a run's report decides: how a run that reached its end ended. */
export const RUN_OUTCOMES = ['succeeded', 'failed', 'superseded'] as const satisfies readonly RunPhase[];
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/**
 * A run as `hopper runs`, `hopper wait` and the console show it: its phase, or how Step Functions
 * ended an execution without a report (`timed_out`: past its TimeoutSeconds; `stopped`: aborted).
 */
export const LISTED_RUN_STATES = [...RUN_PHASES, 'timed_out', 'stopped'] as const;
export type ListedRunState = (typeof LISTED_RUN_STATES)[number];

/** Step Functions' execution statuses as listed run states; an execution in no other is running. */
const EXECUTION_STATES: Readonly<Record<string, ListedRunState>> = {
  SUCCEEDED: 'succeeded',
  FAILED: 'failed',
  TIMED_OUT: 'timed_out',
  ABORTED: 'stopped',
};

/** A run from its execution's status; `reported`: its report's outcome (a superseded run succeeds). */
export function listedRunState(executionStatus: string | undefined, reported?: RunPhase): ListedRunState {
  const state = EXECUTION_STATES[executionStatus ?? ''] ?? 'running';
  return state === 'succeeded' && reported === 'superseded' ? 'superseded' : state;
}
export type StopCode = (typeof STOPS)[StopName];
