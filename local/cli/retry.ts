/**
 * `hopper retry <drop>`: resumes the drop's failed run from its dataset at the service. It
 * uploads the drop's train.json again with `"resume": true` (and --max-attempts as
 * `maxAttempts`), which starts a run through the normal trigger, in a deployed stack and in local
 * mode alike; that run goes on with the dataset the failed run left (lambdas/ownership/resume.ts).
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { MAX_ATTEMPTS_LIMIT } from '../../lambdas/drop/train-json.js';
import { messageOf, resumableAfter, RunError } from '../../lambdas/core/errors/index.js';
import { resumeTarget } from '../../lambdas/ownership/index.js';
import type { ResumeFrom } from '../../lambdas/core/state/index.js';
import { readStatus, supersededEntryOf, type RunStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { nullIfNotFound, putJson } from '../../lambdas/storage/objects.js';
import { CommandError, EXIT, json, type CommandIo, type CommandSpec } from './command.js';
import { targetCommand, TARGET_FLAGS, type Target } from './target.js';

export const RETRY_SPEC: CommandSpec = {
  name: 'retry',
  usage: '<drop> [options]',
  about:
    "Resumes the drop's failed run without uploading its data again: uploads inbox/<drop>/train.json again with \"resume\": true, which starts a run that takes the failed run's dataset at the service and goes on from where the dataset stands (sending only the files not yet uploaded, then structuring and labelling what is left) and trains (adopting a model the failed run had already started, so no credit is spent twice). A run interrupted before it had a dataset is started again from the drop's files. It refuses at once a run whose error a resume would meet again (the drop's, the labels', a dataset the service refused), with that error's advice. Follow it with: hopper status <drop>. docs/errors.md says for each error code whether resuming applies and what it costs.",
  flags: {
    'max-attempts': {
      value: 'N',
      range: [1, MAX_ATTEMPTS_LIMIT],
      help: 'set train.json "maxAttempts" to N: after training_failed, attempts count every training of the dataset, so resuming needs a higher limit',
    },
    ...TARGET_FLAGS,
  },
  positionals: { min: 1, max: 1, what: 'drop', hint: 'hopper retry reviews' },
  exits: { 0: true, 1: true, 2: true },
};

export const runRetryCommand = targetCommand(RETRY_SPEC, async (args, target, out) => {
  const drop = args.positionals[0] ?? '';
  const maxAttempts = args.number('max-attempts');
  const status = await readStatus(target.s3, target.bucket, drop);
  // The run validate_drop will resume, by the same rule (lambdas/ownership/resume.ts).
  let from: ResumeFrom;
  try {
    from = resumeTarget(status, drop);
  } catch (error) {
    // A run interrupted before it had a dataset starts again from the drop's files.
    if (status?.state === 'interrupted' && status.dataset_id === null) {
      return await startAgain(target, status, out, args.on('json'));
    }
    throw new CommandError('not_resumable', notResumableMessage(error, status, drop));
  }
  const key = inboxKey(drop, TRAIN_JSON);
  const { config, modified } = await readTrainJson(target, key);
  // train.json as it was when the run started: the cause of an error it holds is still there.
  if (status?.run_id === from.runId && modified <= Date.parse(status.started_at)) {
    const change = sameFailure(status, maxAttempts);
    if (change !== undefined) {
      throw new CommandError(
        'same_failure',
        `run ${status.run_id} of "${drop}" failed with ${String(status.error?.code)}, and s3://${target.bucket}/${key} is unchanged since, so a retry would fail the same way: ${change}`,
      );
    }
  }
  const resumed = { ...config, resume: true, ...(maxAttempts === undefined ? {} : { maxAttempts }) };
  const result = {
    drop,
    resumes_run: from.runId,
    error_code: from.errorCode,
    dataset_id: from.datasetId === '' ? null : from.datasetId,
    ...(from.datasetName === undefined ? {} : { dataset_name: from.datasetName }),
    ...(await putTrainJson(target, key, resumed)),
  };
  // A run cut off while it created its dataset names the dataset, not its id (lambdas/steps/create-dataset.ts).
  const dataset =
    from.datasetId === ''
      ? `its dataset "${from.datasetName ?? ''}", which the resumed run looks for at the service (from the drop's files if the service never created it)`
      : `dataset ${from.datasetId}`;
  const kept = keptNotCurrent(status, from);
  out.stdout.write(
    args.on('json')
      ? json({ ...result, ...(kept === '' ? {} : { model_not_current: from.paidModelId }) })
      : `hopper retry: resuming run ${from.runId} of "${drop}"${from.errorCode === null ? '' : ` (${from.errorCode})`} from ${dataset}: uploaded ${result.train_json} with "resume": true.${kept} Follow it with: hopper status ${drop}\n`,
  );
  return EXIT.succeeded;
});

/**
 * What a resume adopting an older run's paid model after train.json changed does with it (the
 * report's rule, lambdas/steps/lineage.ts): it copies it but does not make it current. '' else.
 * Changed is told as the report tells it, by the settings (config_fingerprint) of that run against
 * those of the drop's latest run, not by times: S3 gives both uploads' times to the second.
 */
function keptNotCurrent(status: RunStatus | null, from: ResumeFrom): string {
  const entry = supersededEntryOf(status, from.runId);
  const latest = status?.config_fingerprint ?? null;
  const settings = entry?.config_fingerprint ?? null;
  if (from.paidModelId === undefined || latest === null || settings === null || latest === settings)
    return '';
  return ` Its model ${from.paidModelId} was trained from the train.json of that run, which has changed since: the resumed run copies it under its own id, and the drop's current model stays as it is.`;
}

/**
 * Why the run cannot be resumed; for a failure the drop's own files caused, what to do instead:
 * fix them and upload train.json again (docs/errors.md says how for each code).
 */
function notResumableMessage(error: unknown, status: RunStatus | null, drop: string): string {
  const detail = error instanceof RunError ? error.detail : messageOf(error);
  const code = status?.error?.code;
  if (code === undefined || resumableAfter(code) || status?.state !== 'failed') return detail;
  return `${detail}. Fix it in inbox/${drop}/ (docs/errors.md, ${code}), then upload ${TRAIN_JSON} again, without "resume": a new run starts from the drop's files`;
}

/** Uploads train.json again as it is (without "resume"): a new run of the drop's files. */
async function startAgain(target: Target, status: RunStatus, out: CommandIo, asJson: boolean) {
  const key = inboxKey(status.drop, TRAIN_JSON);
  const { resume: _resume, ...config } = (await readTrainJson(target, key)).config;
  const put = await putTrainJson(target, key, config);
  out.stdout.write(
    asJson
      ? json({ drop: status.drop, restarts_run: status.run_id, ...put })
      : `hopper retry: run ${status.run_id} of "${status.drop}" was interrupted before it had a dataset at the service: starting it again from the drop's files (uploaded ${put.train_json}). Follow it with: hopper status ${status.drop}\n`,
  );
  return EXIT.succeeded;
}

/**
 * What to change when the run's error came from train.json, which a retry takes along as it is
 * (and --max-attempts): undefined when a retry may end otherwise.
 */
function sameFailure(status: RunStatus, maxAttempts: number | undefined): string | undefined {
  switch (status.error?.code) {
    case 'unknown_encoder':
      return `fix "encoder" in ${TRAIN_JSON} (or remove it, for the service's default) and upload it with "resume": true, which resumes the run`;
    case 'training_failed':
      // Attempts count every training of the dataset, the failed run's too.
      return maxAttempts !== undefined && maxAttempts > status.attempts
        ? undefined
        : `give --max-attempts N above ${String(status.attempts)}: attempts count every training of the dataset, the failed run's too`;
    default:
      return undefined;
  }
}

/** Writes the drop's train.json: where it went and its etag, as the output shows them. */
async function putTrainJson(target: Target, key: string, config: Record<string, unknown>) {
  const put = await putJson(target.s3, target.bucket, key, config);
  return { train_json: `s3://${target.bucket}/${key}`, etag: put.ETag?.replace(/"/g, '') ?? null };
}

/** The drop's train.json as an object, and when it was last written. */
async function readTrainJson(target: Pick<Target, 's3' | 'bucket'>, key: string) {
  const object = await target.s3
    .send(new GetObjectCommand({ Bucket: target.bucket, Key: key }))
    .catch(nullIfNotFound);
  if (object === null) {
    throw new CommandError(
      'not_resumable',
      `s3://${target.bucket}/${key} is gone (the inbox keeps objects for a limited time): upload the drop's train.json with "resume": true yourself`,
    );
  }
  const text = (await object.Body?.transformToString()) ?? '';
  const modified = object.LastModified?.getTime() ?? Date.now();
  try {
    const value: unknown = JSON.parse(text.replace(/^\uFEFF/, ''));
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return { config: value as Record<string, unknown>, modified };
  } catch {
    // reported below
  }
  throw new CommandError(
    'not_resumable',
    `s3://${target.bucket}/${key} is not a JSON object: fix it, with "resume": true, and upload it`,
  );
}
