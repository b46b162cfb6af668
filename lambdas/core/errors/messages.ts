/**
 * The words of every run error, each written once: no RunError elsewhere spells its message
 * inline (test/tools/error-words.test.ts), so a step that finds a problem itself and the report
 * (or the error mapping) that finds it later say the same thing. A message says what happened
 * and what to do (docs/errors.md has the table). The words about a paid model are here too
 * (supersede, the training claim, retry advice, what a stopped `hopper run` left at the service),
 * the CLI's included. First the words several places raise, then those raised at one place.
 */

import { holdsCredit, keepsCredit, type Model } from '../../service-client/index.js';
import type { RunInput, RunState, TrainingClaim } from '../state/state.js';
import type { StepName } from '../state/vocabulary.js';

/** `text` with its first letter a capital: a message that starts a sentence of another. */
export function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const RESUME =
  'resume the run without uploading again (hopper retry <drop>, or upload train.json with "resume": true)';

/** name_too_long: a drop's name that leaves its keys over S3's limit, which no retry helps. */
export function nameTooLongMessage(drop: string, bytes: number, max: number): string {
  return `the drop's name ${drop} takes ${String(bytes)} bytes (UTF-8), and at most ${String(max)} leave room for its longest key, status/.runs/<drop>/<run id>.json, within S3's 1024 bytes: rename the folder to a shorter name and upload it again`;
}

/** no_credits: the account cannot pay for a training. */
export function noCreditsMessage(datasetId?: string): string {
  const what = datasetId === undefined ? '' : ` to train dataset ${datasetId}`;
  return `the training service account has no credits left${what} (a training costs 1 credit; a failed one is refunded): add credits at the service, then ${RESUME}`;
}

/**
 * credit_budget: the credit budget has no credit left in a window; the run stopped before its
 * next training, having spent `spent` credits on the trainings it started before (a sweep's).
 */
export function creditBudgetMessage(over: {
  readonly window: '24 h' | '30 days';
  readonly used: number;
  readonly limit: number;
  readonly freesAt: string;
  readonly drop: string;
  readonly spent: number;
}): string {
  const raise =
    over.window === '24 h'
      ? 'cdk deploy -c creditBudget=N, or --credit-budget N for hopper local and hopper run'
      : 'cdk deploy -c creditBudget30Days=N';
  const stopped =
    over.spent === 0
      ? 'stopped before starting a training and spent no credit'
      : `stopped before starting another training, having spent ${String(over.spent)} ${over.spent === 1 ? 'credit' : 'credits'} on the trainings it started before`;
  return `the credit budget is used up: ${String(over.used)} of ${String(over.limit)} credits taken in the last ${over.window}, so this run ${stopped}. The budget frees a credit at ${over.freesAt} (the oldest credit counted + ${over.window}); then hopper retry ${over.drop} resumes the run without uploading again. To go on sooner, raise the budget (${raise}) and retry`;
}

/**
 * unknown_encoder: the service refused the encoder.
 * @param encoder train.json's `encoder`, or null when Hopper asked for the service's default
 * @param offered the service's encoders as a list to show, when known
 * @param reason the service's own words, when there is no encoder name to show
 */
export function unknownEncoderMessage(failure: {
  readonly encoder: string | null;
  readonly offered?: string;
  readonly reason?: string;
}): string {
  const what =
    failure.encoder === null
      ? `the service refused the encoder Hopper asked for${failure.reason === undefined ? '' : ` (${failure.reason})`}`
      : `train.json names the encoder "${failure.encoder}", which the service does not offer`;
  const offered = failure.offered === undefined ? '' : `; its encoders are ${failure.offered}`;
  return `${what}${offered}. Set "encoder" to one the service offers, or remove it to use the default, and drop train.json again`;
}

/** dataset_expired: the service dropped the dataset before a model was trained. */
export function datasetExpiredMessage(dataset: {
  readonly id: string | undefined;
  readonly expiresAt: string | undefined;
  readonly step?: number | undefined;
}): string {
  const step = dataset.step === undefined ? '' : `, at step ${String(dataset.step)}`;
  return `dataset ${dataset.id ?? '(unknown)'} expired at the service at ${dataset.expiresAt ?? 'an unknown time'}${step}, before a model was trained; drop the folder again, train.json last, to start over`;
}

/**
 * model_files_gone: the trained model's files went before Hopper copied them: moved to the
 * service's hosting (hf_repo), where the model is usable, or expired or refunded, so that it can
 * no longer be had. With `failedCopies`, copies were tried and failed until then
 * (lambdas/steps/copy-model.ts). One wording for the stop, the copy and docs/errors.md.
 */
export function modelFilesGoneMessage(model: {
  readonly id: string | undefined;
  readonly drop: string;
  /** When the service deleted them (files_deleted_at), else when they were to expire. */
  readonly goneAt?: string | null;
  /** Where the service moved them (hf_repo), when it did. */
  readonly movedTo?: string | null;
  /** The copies that failed before: since when, and the last one's error. */
  readonly failedCopies?: { readonly since: string; readonly lastError: string };
}): string {
  const id = model.id ?? '(unknown)';
  const when = model.goneAt === undefined || model.goneAt === null ? '' : ` at ${model.goneAt}`;
  if (model.movedTo !== undefined && model.movedTo !== null) {
    return `model ${id} was trained (1 credit), and the service moved its files to its hosting${when} (hf_repo ${model.movedTo}) before Hopper could copy them into the bucket: the model is there, usable as ${model.movedTo}. Nothing is lost; training it again would spend another credit`;
  }
  const { failedCopies } = model;
  const what =
    failedCopies === undefined
      ? `the files of model ${id} went at the service${when} (expired or refunded) before Hopper could copy them`
      : `every copy of model ${id} from ${failedCopies.since} until its files could be gone at the service${when} failed, the last with: ${failedCopies.lastError}; its files are gone by now`;
  return `${what}, so the model cannot be downloaded any more and its credit is spent (a refund gives it back). hopper retry ${model.drop} trains the same dataset again without uploading, while the service keeps it (1 credit); or drop train.json again`;
}

/**
 * unsupported_next_action: the service asked for an action Hopper does not know, or one it
 * does not handle on that record.
 * @param where the record (`the model m-1 at step 4`) or the request that brought the value
 */
export function unsupportedNextActionMessage(nextAction: string, where: string): string {
  return `the service asked for next_action "${nextAction}" on ${where}, which this version of Hopper does not handle there; check the record at the service, or upgrade Hopper`;
}

/** training_failed: every allowed attempt failed (start_training finds it, or the state machine). */
export function trainingFailedMessage(failure: {
  readonly attempts: number;
  readonly maxAttempts: number | undefined;
  readonly modelId: string | undefined;
  readonly error: string | null | undefined;
}): string {
  const model = failure.modelId === undefined ? '' : ` (model ${failure.modelId})`;
  return `training failed on ${String(failure.attempts)} of ${String(failure.maxAttempts ?? '?')} attempts (maxAttempts); the last attempt${model} failed with: ${failure.error ?? 'no reason given'}. Failed attempts cost no credit: check the data or raise "maxAttempts" in train.json, then upload it again`;
}

/** training_failed of a sweep: the encoders that failed, those trained, and how to go on. */
export function sweepFailedMessage(sweep: {
  readonly drop: string;
  readonly maxAttempts: number | undefined;
  readonly failed: readonly string[];
  readonly trained: readonly string[];
  readonly error: string | null;
}): string {
  const names = (encoders: readonly string[]): string => encoders.map((encoder) => `"${encoder}"`).join(', ');
  const kept =
    sweep.trained.length === 0
      ? 'no encoder trained a model'
      : `the models of ${names(sweep.trained)} were copied and kept`;
  const max = String(sweep.maxAttempts ?? '?');
  return `training failed on every attempt (maxAttempts ${max}) for encoder ${names(sweep.failed)} (the last failed with: ${sweep.error ?? 'no reason given'}); ${kept}. Failed attempts cost no credit: hopper retry ${sweep.drop} --max-attempts N (above ${max}) trains the failed encoders again and adopts the trained models without a second credit`;
}

/**
 * What `hopper retry <drop>` does for a run that ended: the one piece of advice for a failed or
 * interrupted run, in its status, the restart line of local mode, the console and docs/errors.md.
 * A run that left a paid model has it adopted, never paid for twice (lambdas/ownership/resume.ts).
 */
export function retryAdvice(run: {
  readonly drop: string;
  readonly paidModel: { readonly id: string; readonly status: string } | null;
  readonly datasetId: string | null;
  /** The name of the dataset the run creates (status `dataset_name`), when it has no id yet. */
  readonly datasetName?: string | null;
  /** Its model as copied into the bucket (status `model_id` and `model.onnx`), when it was. */
  readonly copiedModel?: { readonly id: string; readonly at: string } | null;
}): string {
  // Copied, the model is no longer the run's paid_model, but its credit is spent all the same.
  if (run.copiedModel != null) {
    return `its model ${run.copiedModel.id} was paid for (1 credit) and copied to ${run.copiedModel.at}: hopper retry ${run.drop} adopts it and finishes the run without a second credit`;
  }
  if (run.paidModel !== null) {
    return `its model ${run.paidModel.id} was paid for (1 credit) and was ${run.paidModel.status} at the service: hopper retry ${run.drop} adopts it and copies it without a second credit`;
  }
  if (run.datasetId !== null) {
    return `hopper retry ${run.drop} resumes it from its dataset ${run.datasetId} at the service, where the dataset stands: files already uploaded are not sent again`;
  }
  if (typeof run.datasetName === 'string') {
    return `the run may have asked the service for its dataset "${run.datasetName}" without hearing back: hopper retry ${run.drop} looks for it there by that name and resumes from it, or starts again from the drop's files if the service never created it`;
  }
  return `hopper retry ${run.drop} starts it again from the drop's files, which are still in the bucket`;
}

/** A failure's message, then what `hopper retry` does with the run's paid model (the Report). */
export function withRetryAdvice(message: string, run: Parameters<typeof retryAdvice>[0]): string {
  return `${message.replace(/\.$/, '')}. ${capitalised(retryAdvice(run))}`;
}

/**
 * superseded: a newer train.json of the drop took over (lambdas/ownership/supersede.ts). A run
 * whose training held a credit finished it, its model kept at `keptAt`; any other stopped before
 * `stoppedBefore` without training.
 */
export function supersededMessage(
  state: RunState,
  newer: Pick<RunInput, 'runId' | 'startedAt'>,
  how: { readonly keptAt: string } | { readonly stoppedBefore: string },
): string {
  const { drop } = state.run;
  const tookOver = `a newer train.json of drop "${drop}" (run ${newer.runId}, uploaded ${newer.startedAt}) took over`;
  const follows = `status/${drop}.json follows the newer run`;
  if ('keptAt' in how) {
    return `${tookOver} while this run's training (model ${state.model?.id ?? '?'}) held a credit, so this run finished it rather than waste it: its model is kept under its own model id at ${how.keptAt}, and it cost 1 credit. ${follows}`;
  }
  const { model, dataset } = state;
  const refunded =
    model === undefined ? '' : ` Its failed training (model ${model.id}) gave its credit back.`;
  const left =
    dataset === undefined
      ? ''
      : ` Its dataset ${dataset.id} stays at the service until it expires (${dataset.expiresAt}).`;
  return `${tookOver}, so this run stopped before ${how.stoppedBefore} without starting a training: it spent no credit.${refunded}${left} ${follows}`;
}

/** training_in_progress: another run of the drop holds its training (lambdas/ownership/training-claim.ts). */
export function trainingInProgressMessage(drop: string, holder: TrainingClaim): string {
  const model = holder.model_id === null ? '' : ` (model ${holder.model_id})`;
  return `another run of drop "${drop}" (run ${holder.run_id ?? '?'}) holds the drop's training${model}, and a drop trains one model at a time; once it ends, upload train.json again`;
}

/**
 * `hopper run` refuses (exit 4): a training of a dataset named `datasetName` is still under way at
 * the service, most likely left by a stopped `hopper run` (local/cli/left-at-service.ts).
 */
export function trainingUnderWayMessage(datasetName: string, serviceUrl: string, model: Model): string {
  return `a training of a dataset named "${datasetName}" is still under way at the training service (${serviceUrl}): model ${model.id} (${model.status}) of dataset ${model.dataset_id}, started ${model.created_at}, holding 1 credit; most likely an earlier \`hopper run\` of this folder that was stopped. Starting another would spend a second credit for the same drop, so nothing was started. Wait until it ends (\`hopper models --dataset ${model.dataset_id}\`), then run again; or set another "name" in train.json to train alongside it`;
}

/** What a model a stopped `hopper run` left at the service costs (contract.ts holdsCredit). */
export function leftModelCredit(model: Pick<Model, 'status' | 'next_action'>): string {
  if (holdsCredit(model.status, model.next_action)) return 'holds 1 credit';
  return keepsCredit(model.status) ? 'its credit is spent and its files are gone' : 'its credit came back';
}

/**
 * What to do about what a stopped `hopper run` of `folder` left at the service: its trainings
 * `underWay`, a paid model finished (`credits` held), or no credit spent.
 */
export function leftAtServiceAdvice(folder: string, underWay: readonly Model[], credits: number): string {
  const again = `\`hopper run ${folder}\` again`;
  if (underWay.length > 0) {
    const ids = underWay.map((model) => model.id).join(', ');
    return `the training (${ids}) goes on at the service and keeps its credit. ${again} will not start a second one while it is queued or training: it says so and stops. See it with \`hopper models --dataset ${underWay[0]?.dataset_id ?? ''}\`.`;
  }
  if (credits > 0) {
    return `a finished model is paid for and its files are at the service until they expire: see it with \`hopper models --status done\`; ${again} trains a new one (1 more credit).`;
  }
  return `no credit was spent. The service has no delete: the dataset expires on its own. ${again} starts over with a new dataset.`;
}

/** interrupted: local mode stopped while the run was going (local/emulator/interrupted-runs.ts). */
export function interruptedMessage(
  run: Parameters<typeof retryAdvice>[0] & { readonly step: string },
): string {
  return `local mode stopped while this run was at ${run.step}, and nothing runs it now: ${retryAdvice(run)}`;
}

/** What a step was doing when a record went, in the user's words. */
const DOING: Readonly<Partial<Record<StepName, string>>> = {
  upload_files: 'while its files were uploaded',
  poll_dataset: 'while the service processed it',
  structure: 'while it was structured',
  pick_decisions: 'while its decisions were picked',
  label_examples: 'while its examples were labelled',
  start_training: 'as its training was started',
  poll_model: 'while it trained',
  copy_model: 'while it was copied',
};

function doing(step: StepName): string {
  return DOING[step] ?? `at ${step}`;
}

/**
 * dataset_gone (or dataset_expired, once `expiresAt` has passed): the service answered 404 on the
 * run's dataset: deleted there, or purged after it expired (lambdas/core/errors/gone.ts).
 */
export function datasetGoneMessage(dataset: {
  readonly id: string;
  readonly expiresAt: string;
  /** Its expires_at has passed: purged rather than deleted. */
  readonly expired: boolean;
  readonly endpoint: string;
  readonly step: StepName;
  /** The run had started a training of it (a failed one, whose credit came back). */
  readonly trainingStarted: boolean;
}): string {
  const why = dataset.expired
    ? `it expired at ${dataset.expiresAt} and the service purged it`
    : `it was deleted there before it was to expire (${dataset.expiresAt})`;
  const cost = dataset.trainingStarted ? '' : ', and the run spent no credit';
  return `dataset ${dataset.id} is gone at the service (${dataset.endpoint} answered 404 not_found ${doing(dataset.step)}): ${why}. Nothing can be done with it any more${cost}; drop the folder again, train.json last, to start over`;
}

/** model_gone: the service answered 404 on the run's model, paid for (lambdas/core/errors/gone.ts). */
export function modelGoneMessage(model: {
  readonly id: string;
  /** Its status when the run last saw it. */
  readonly status: string;
  readonly endpoint: string;
  readonly step: StepName;
  readonly drop: string;
}): string {
  return `model ${model.id} is gone at the service (${model.endpoint} answered 404 not_found ${doing(model.step)}; it was ${model.status} when last seen): deleted there, so it can be neither polled nor downloaded. Its training was paid for with 1 credit, which is spent: the model is lost at the service and Hopper holds no copy. Drop train.json again to train a new model, or resume (hopper retry ${model.drop}) to train the same dataset again while the service still holds it; either costs 1 more credit`;
}

// The words raised at one place each, by the module that raises them. The drop (lambdas/drop/):

/** The drop's folder as its user knows it, and what sends it again once it is fixed. */
export interface DropPlace {
  /** `inbox/<drop>/` in the bucket; the folder given to `hopper run` or `hopper check`. */
  readonly folder: string;
  /** What finishes the advice "..., then <sendAgain>". */
  readonly sendAgain: string;
}

export const nestedFilesMessage = ({ folder, sendAgain }: DropPlace, nested: string): string =>
  `${folder} has files in sub-folders: ${nested}. A drop is one flat folder (plain file names only): move them into ${folder} or delete them, then ${sendAgain}`;

export const noDataFilesMessage = ({ folder, sendAgain }: DropPlace, present: string): string =>
  `${folder} holds no data files to train on (it has ${present}): put the CSV or JSONL files beside train.json, then ${sendAgain}`;

export const tooManyFilesMessage = (folder: string, files: number, max: number): string =>
  `${folder} holds ${String(files)} data files and the service takes at most ${String(max)} per dataset: list the files to send in train.json "files"`;

export const emptyFilesMessage = (folder: string, empty: string): string =>
  `data files in ${folder} are empty (0 bytes): ${empty}. Give them their content, or leave them out with train.json "files"`;

export const fileListTooLongMessage = (
  folder: string,
  files: number,
  kib: { list: number; max: number },
): string =>
  `the names of the ${String(files)} data files in ${folder} are too long for one run: the list takes ${String(kib.list)} KiB and a run carries at most ${String(kib.max)} KiB of it (Step Functions caps a run's state). Send fewer files per drop (train.json "files"), merge files, or use shorter names`;

/** invalid_train_json: train.json's values take more of the run's state than it carries. */
export const trainJsonTooLargeForRunMessage = (bytes: { config: number; max: number }): string =>
  `train.json's values make the run's configuration ${String(bytes.config)} bytes, and a run carries at most ${String(bytes.max)} bytes of its settings and file names (Step Functions caps a run's state): shorten its longest values (the answers in "decisions", the encoder ids, "promote"'s metric)`;

/** invalid_train_json: train.json is over `max` bytes (`bytes` when listed, else found reading it). */
export const trainJsonTooLargeMessage = (max: number, bytes?: number): string =>
  bytes === undefined
    ? `train.json is larger than ${String(max)} bytes; it is a small JSON object such as {"name": "reviews"}`
    : `train.json is ${String(bytes)} bytes; it is a small JSON object (at most ${String(max)} bytes) such as {"name": "reviews"}`;

export const invalidFileNamesMessage = (folder: string, named: string, rule: string): string =>
  `files in ${folder} have names the training service does not take: ${named}. A file name has ${rule}; rename them, or leave them out with train.json "files"`;

export const namedFilesMissingMessage = (
  { folder, sendAgain }: DropPlace,
  problems: readonly string[],
): string =>
  `train.json ${problems.join(' and ')}, not in ${folder}: add the missing files (or fix the names; they are case-sensitive), then ${sendAgain}`;

export const lostTrackMessage = (name: string): string => `validate_drop lost track of ${name}`;

export const notCsvMessage = (fileName: string, problem: string): string =>
  `${fileName} is not valid CSV: ${problem} and upload the drop again`;

export const repeatedColumnMessage = (fileName: string, column: string, times: number, has: string): string =>
  `${fileName}: the header row names "${column}" ${String(times)} times (it has ${has}); keep one "${column}" column`;

export const missingColumnsMessage = (
  fileName: string,
  has: string,
  required: string,
  missing: string,
): string =>
  `${fileName}: the header row has ${has}; it needs ${required} (missing ${missing}). Example header: id,label`;

export const emptyLabelsMessage = (fileName: string, required: string): string =>
  `${fileName} is empty; it needs a header row with ${required}, then one row per held-out example`;

/** `match`: what the rows share, `match held-out example "r1"` or `have id "r1"`. */
export const labelAmbiguousMessage = (fileName: string, match: string, groups: readonly string[]): string =>
  `${fileName}: rows that ${match} give different labels (${groups.join('; ')}); make those rows agree or keep one of them`;

export const labelsWithoutRowsMessage = (fileName: string): string =>
  `${fileName} has a header and no rows, so it answers no held-out example: add a row per held-out example with its label (or remove the file if the service holds out none)`;

export const labelMissingMessage = (fileName: string, example: string, ways: readonly string[]): string =>
  `no row of ${fileName} matches held-out example ${example}: add a row ${ways.join(' or ')} with its label`;

export const tooManyObjectsMessage = (folder: string, pages: number): string =>
  `${folder} holds more objects than a drop can (over ${String(pages)} pages of keys): a drop folder holds a few data files, train.json and optionally labels.csv`;

export const stillArrivingMessage = (folder: string, seconds: number, which: string): string =>
  `files were still arriving in ${folder} ${String(seconds)} s after train.json${which}, so Hopper did not guess which ones to train on: upload the data files first, then train.json again, last`;

export const notUtf8Message = (fileName: string, offset: number, hex: string): string =>
  `${fileName} is not UTF-8 text: the byte at offset ${String(offset)} (0x${hex}) does not start a valid UTF-8 character. Save the file as UTF-8 and upload it again`;

// The steps (lambdas/steps/):

export const modelNotFinishedMessage = (model: Pick<Model, 'id' | 'next_action' | 'status'>): string =>
  `model ${model.id} is at next_action ${model.next_action} (status ${model.status}), not download: there is no finished model to copy`;

export const modelSizeUnknownMessage = (modelId: string): string =>
  `model ${modelId} is finished but the service did not give its size (onnx_bytes), so a copy could not be checked`;

export const modelSentSizeMessage = (modelId: string, bytes: number, problem: string): string =>
  `the service sent model ${modelId} with a size other than its onnx_bytes (${String(bytes)}): ${problem}`;

export const modelStoredSizeMessage = (url: string, stored: number | null, bytes: number): string =>
  `${url} holds ${stored ?? 'no'} bytes after the copy, the model has ${String(bytes)}; the bad copy was deleted`;

export const taskOfferedAgainMessage = (task: string): string =>
  `the training service offered held-out task ${task} again right after it was answered; report it to the service`;

export const labelsRequiredMessage = (remaining: number, choices: readonly string[]): string =>
  `the service holds out ${String(remaining)} ${remaining === 1 ? 'example' : 'examples'} for labelling; add labels.csv with a label column and an id or text column (the labels: ${choices.join(', ')}), then upload the drop again, train.json last`;

export const invalidLabelMessage = (
  label: Readonly<Record<'rows' | 'fileName' | 'gives' | 'example' | 'choices', string>>,
): string =>
  `${label.rows} of ${label.fileName} ${label.gives} for held-out example ${label.example}; the service's choices are ${label.choices}: fix the label in ${label.fileName} and upload the drop again`;

export const noQuestionsMessage = (datasetId: string): string =>
  `the service shows dataset ${datasetId} at pick_decisions without its questions; check the dataset at the service, or set "decisions": "service" in train.json and drop it again`;

export const invalidDecisionMessage = (problems: readonly string[], asked: string): string =>
  `train.json "decisions": ${problems.join('; ')}. The service asks: ${asked === '' ? 'no questions' : asked}. Fix "decisions" in train.json and drop it again`;

export const fileChangedMessage = (key: string): string =>
  `${key} changed after validation; drop the folder again, train.json last`;

export const fileDeletedMessage = (key: string): string =>
  `${key} was deleted after validation; put it back (or drop the folder again), train.json last`;

export const unvalidatedFileMessage = (name: string, validated: readonly string[]): string =>
  `the dataset lists ${name}, which is not among the drop's validated files (${validated.join(', ')})`;

// The runtime, the drop's owner (lambdas/runtime/, lambdas/ownership/) and the trigger:

export const s3UnreachableMessage = (problem: string): string => `S3 could not be reached: ${problem}`;

export const unexpectedFailureMessage = (problem: string): string => `Hopper failed unexpectedly: ${problem}`;

export const s3AnsweredMessage = (name: string, problem: string): string => `S3 answered ${name}: ${problem}`;

export const contendedWriteMessage = (what: string, attempts: number, why: string): string =>
  `${what} changed under ${String(attempts)} writes in a row${why}; the step is retried`;

export const eventNotPutMessage = (detailType: string, runId: string, problem: string): string =>
  `the event "${detailType}" of run ${runId} could not be put on the event bus: ${problem}`;

export const emptySecretMessage = (secretId: string): string =>
  `the secret ${secretId} holds no API key: put the training service's key in it as plain text`;

export const invalidStepInputMessage = (problem: string): string =>
  `the step's input has no valid "run": ${problem}`;

export const notObjectCreatedMessage = (problem: string): string =>
  `not an S3 Object Created event: ${problem}`;

export const missingSlotMessage = (step: string, slot: string): string =>
  `${step} ran without $.${slot} in its input: Hopper's state machine definition is broken; report this as a bug`;

export const historyLimitMessage = (
  doing: string,
  loops: Readonly<Record<'rounds' | 'polls' | 'batches' | 'max', number>>,
): string =>
  `the run went round its loops ${String(loops.rounds)} times while ${doing} (${String(loops.polls)} polls and waits, ${String(loops.batches)} upload or label batches that left work for another); Step Functions keeps at most 25,000 events of a run's history, so a run goes round at most ${String(loops.max)} times. The training service answered too slowly for each round to make progress (a batch takes up to 10 minutes). Check the dataset at the service and how fast it answers, then drop train.json again (once the dataset is ready to train, resume it: hopper retry <drop>)`;

export const waitLimitMessage = (polls: number, hours: number, maxDays: number): string =>
  `the training service kept Hopper waiting for ${String(polls)} polls over ${String(hours)} h; a run waits at most ${String(maxDays)} days. Check the dataset or model at the service, then drop train.json again`;
