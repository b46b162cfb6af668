/**
 * The registry of the state machine's Task states: one entry per state, plain data with no CDK
 * import, so both the stack (infra/) and local mode (local/) read the same list. A Task's name
 * is its state name in the definition; local mode binds handlers by that name.
 *
 * What a step is (its Task's name, the slot it writes, the slots it needs) is declared once, in
 * STEPS (lambdas/core/state/vocabulary.ts, plain data), and the registry derives from it: here are only
 * the Lambda's settings, one entry per TaskName (the compiler asks for one when a step is added).
 * Every Task gets the whole state as input and returns its slot, placed at `$.<slot>`. The
 * Task's TimeoutSeconds is its Lambda timeout plus a minute (taskTimeoutSeconds), so a Lambda that
 * runs out of time fails as Sandbox.Timedout first.
 */
import { fileURLToPath } from 'node:url';
import { LAMBDA_DEATH_ERRORS, RETRYABLE_ERROR } from '../lambdas/core/errors/lambda-error.js';
import {
  LAMBDA_DEATH_RETRY,
  TRANSIENT_RETRY,
  type RetrierSettings,
} from '../lambdas/runtime/retry-budget.js';
import {
  STEP_NAMES,
  STEPS,
  type SlotName,
  type StepName,
  type TaskName,
} from '../lambdas/core/state/index.js';

export type { TaskName };

/** The areas of the bucket (lambdas/storage/keys.ts) a handler may touch. */
export type BucketArea = 'inbox' | 'status' | 'models';

/**
 * What a handler may access; infra/permissions.ts turns it into IAM statements.
 * - `read`: GetObject (and HeadObject) on `<area>/*`. Every Task with bucket access may also list
 *   the bucket's key names, so that a missing key answers 404 NoSuchKey rather than 403.
 * - `readWrite`: also PutObject.
 * - `multipart`: also multipart uploads (PutObject, AbortMultipartUpload) and DeleteObject, which
 *   copy_model uses to remove a copy whose size is wrong.
 */
export type AreaAccess = 'read' | 'readWrite' | 'multipart';

export interface TaskAccess {
  readonly bucket: Readonly<Partial<Record<BucketArea, AreaAccess>>>;
  /** Reads the API key secret: true for the steps that call the training service. */
  readonly apiKey: boolean;
  /**
   * Puts Hopper's run events (events:PutEvents on the default bus, with the stack's source only;
   * lambdas/records/events/events.ts). @default false
   */
  readonly events?: boolean;
  /** Takes or gives back credits of the credit budget (its ledger is under status/). @default false */
  readonly credits?: boolean;
  /**
   * Asks Step Functions whether another run of the drop still runs (states:DescribeExecution on
   * the state machine's executions; lambdas/runtime/executions.ts). @default false
   */
  readonly executions?: boolean;
}

/** A Task's Lambda, as the stack builds it. */
export interface TaskSettings {
  /** One line on what the Task does (the Lambda's description). */
  readonly description: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  readonly access: TaskAccess;
}

export interface TaskSpec extends TaskSettings {
  /** The state name in the definition (local mode overrides Tasks by this name). */
  readonly name: TaskName;
  /** The step the Task runs (STEPS in lambdas/core/state/vocabulary.ts). */
  readonly step: StepName;
  /** The handler entry file in HANDLERS_FOLDER, named after the step; it exports `handler`. */
  readonly handlerFile: string;
  /** Where the definition puts the Task's result: `$.<slot>` (the step's declaration). */
  readonly slot: SlotName;
}

const MINUTE = 60;
/** Lambda's ceiling; the time-boxed steps stop taking new work well before it. */
const LONG = 15 * MINUTE;
/**
 * Steps that make a few service calls: room for one call's whole retry budget in Lambda
 * (LAMBDA_CLIENT_OPTIONS in lambdas/runtime/retry-budget.ts, a minute) plus the others.
 */
const SERVICE_CALLS = 5 * MINUTE;

/** Every Task writes status/<drop>.json after its step (lambdas/runtime/handler.ts), so reads it too. */
const STATUS = { status: 'readWrite' } as const;
const INBOX = { inbox: 'read', ...STATUS } as const;

/** A step that calls the training service, so reads the API key; by default a few calls on status/ only. */
function callsService(
  description: string,
  {
    bucket = STATUS,
    timeoutSeconds = SERVICE_CALLS,
    memoryMb = 256,
    credits = false,
    executions = false,
  }: Partial<TaskSettings & TaskAccess> = {},
): TaskSettings {
  return { description, timeoutSeconds, memoryMb, access: { bucket, apiKey: true, credits, executions } };
}

/** A step that calls the service for up to Lambda's ceiling, stopping on its own well before it. */
function timeBoxed(description: string, bucket: TaskAccess['bucket'], memoryMb: number): TaskSettings {
  return callsService(description, { bucket, timeoutSeconds: LONG, memoryMb });
}

const TASK_SETTINGS: Readonly<Record<TaskName, TaskSettings>> = {
  ValidateDrop: {
    description: 'checks train.json and the drop files, pins each file to its etag',
    timeoutSeconds: MINUTE,
    memoryMb: 256,
    access: { bucket: INBOX, apiKey: false, events: true },
  },
  // Reads train.json's etag before it creates: a changed upload stops the older run (ownership/supersede.ts).
  CreateDataset: callsService('creates the dataset at the training service', { bucket: INBOX }),
  UploadFiles: timeBoxed('streams the drop files from S3 to the service (time-boxed)', INBOX, 1024),
  // A run whose ready dataset waits for the drop's training claim waits in this poll's loop: it
  // takes the claim at once from a run whose execution has ended (executions).
  PollDataset: callsService("reads the dataset's state and schedules the next poll", { executions: true }),
  Structure: callsService('structures the dataset, or asks for suggested decisions'),
  PickDecisions: callsService('answers the structuring questions as train.json says'),
  LabelExamples: timeBoxed("labels held-out examples from the drop's labels file (time-boxed)", INBOX, 512),
  // Reads train.json's etag before it pays: a changed upload stops the older run (ownership/supersede.ts).
  StartTraining: callsService('starts a training, or adopts one already running for the dataset', {
    bucket: INBOX,
    credits: true,
  }),
  PollModel: callsService("reads the model's state and schedules the next poll", { credits: true }),
  CopyModel: timeBoxed(
    'streams the trained model into models/ and writes model.json',
    { models: 'multipart', ...STATUS },
    1024,
  ),
  Report: {
    description:
      "decides the run's outcome, promotes its model, writes the final status and puts the run's event",
    timeoutSeconds: MINUTE,
    memoryMb: 256,
    // models/: promotes the run's model (current.json) and writes each model.json's lineage.
    access: { bucket: { models: 'readWrite', ...STATUS }, apiKey: false, events: true },
  },
};

/**
 * Lambda's own transient errors as a Task sees them: AWS's best-practice retrier for a Lambda
 * Task (Step Functions developer guide, "Handle Lambda service exceptions",
 * https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html), and
 * throttling (TooManyRequestsException, named on the same page).
 */
export const LAMBDA_SERVICE_ERRORS = [
  'Lambda.ClientExecutionTimeoutException',
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
] as const;

/** One Retry of a Task: the errors it matches, and how it retries them. */
export interface TaskRetrier {
  readonly errors: readonly string[];
  readonly settings: RetrierSettings;
}

/**
 * Every Task's Retry, in the order the definition lists them (the first that matches applies):
 * transient errors (a step's own retryable error, Lambda's service errors) a few times with
 * backoff, and a Task that timed out or whose Lambda died once.
 */
export const TASK_RETRIERS: readonly TaskRetrier[] = [
  { errors: [RETRYABLE_ERROR, ...LAMBDA_SERVICE_ERRORS], settings: TRANSIENT_RETRY },
  { errors: LAMBDA_DEATH_ERRORS, settings: LAMBDA_DEATH_RETRY },
];

/** Every Task, in the order a run meets them: the step's declaration with its Lambda's settings. */
export const TASKS: readonly TaskSpec[] = STEP_NAMES.map((step) => {
  const { task, slot } = STEPS[step];
  return { name: task, step, slot, handlerFile: handlerFileOf(step), ...TASK_SETTINGS[task] };
});

/** `upload_files` -> `upload-files.handler.ts`: an entry file is named after its step. */
export function handlerFileOf(step: StepName): string {
  return `${step.replaceAll('_', '-')}.handler.ts`;
}

/** The Lambda EventBridge invokes for inbox/<drop>/train.json; not a state, starts executions. */
export const TRIGGER = {
  description: 'starts one execution per train.json object (bucket, key, etag)',
  handlerFile: 'trigger.handler.ts',
  timeoutSeconds: 30,
  memoryMb: 256,
  // Each run's first status, written before its execution starts, and hopper doctor's probe records.
  access: { bucket: { status: 'readWrite' }, apiKey: false },
} as const satisfies TaskSettings & { readonly handlerFile: string };

/** A Task's TimeoutSeconds: its Lambda timeout plus a minute for Lambda to report the timeout. */
export function taskTimeoutSeconds(task: Pick<TaskSpec, 'timeoutSeconds'>): number {
  return task.timeoutSeconds + MINUTE;
}

export function taskNamed(name: TaskName): TaskSpec {
  const task = TASKS.find((candidate) => candidate.name === name);
  if (task === undefined) throw new RangeError(`no Task state named ${name}`);
  return task;
}

/** The folder of the Lambda entry files, relative to the repository root. */
export const HANDLERS_FOLDER = 'lambdas/handlers';

/** The absolute path of a handler entry file in HANDLERS_FOLDER. */
export function handlerPath(handlerFile: string): string {
  return fileURLToPath(new URL(`../${HANDLERS_FOLDER}/${handlerFile}`, import.meta.url));
}

/** The name of a handler's bundle: its entry file's, `validate-drop` for validate-drop.handler.ts. */
export function bundleName(handlerFile: string): string {
  return handlerFile.replace(/\.handler\.ts$/, '');
}

/**
 * The folder of a handler's bundle (`index.mjs`, built by `npm run build`): dist/handlers/<name>/
 * of the repository, or of the installed package, whose compiled code sits one folder below its
 * root as this module does in the repository.
 */
export function bundleFolder(handlerFile: string): string {
  return fileURLToPath(new URL(`../dist/handlers/${bundleName(handlerFile)}/`, import.meta.url));
}
