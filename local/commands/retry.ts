/**
 * `hopper retry <drop>`: resumes the drop's failed run from its dataset at the service. It
 * uploads the drop's train.json again with `"resume": true` (and --max-attempts as
 * `maxAttempts`), which starts a run through the normal trigger, in a deployed stack and in local
 * mode alike; that run trains the dataset the failed run left ready (lambdas/run/resume.ts).
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { MAX_ATTEMPTS_LIMIT } from '../../lambdas/drop/train-json.js';
import { messageOf, RunError } from '../../lambdas/run/errors.js';
import { resumeTarget } from '../../lambdas/run/resume.js';
import type { ResumeFrom } from '../../lambdas/run/state.js';
import { readStatus } from '../../lambdas/run/status.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { isNotFound } from '../../lambdas/storage/objects.js';
import {
  CommandError,
  EXIT,
  integerFlag,
  json,
  runCommand,
  TARGET_HELP,
  type CommandDeps,
  type CommandIo,
} from './command.js';
import type { Target } from './target.js';

export const RETRY_HELP = `Usage: hopper retry <drop> [options]

Resumes the drop's failed run without uploading its data again: uploads inbox/<drop>/train.json
again with "resume": true, which starts a run that takes the failed run's dataset at the service,
skips uploading, structuring and labelling, and trains (adopting a model the failed run had
already started, so no credit is spent twice). Follow it with: hopper status <drop>.
docs/errors.md says for each error code whether resuming applies and what it costs.

Options:
  --max-attempts N    set train.json "maxAttempts" to N (1-${String(MAX_ATTEMPTS_LIMIT)}): after training_failed, attempts
                      count every training of the dataset, so resuming needs a higher limit
${TARGET_HELP}
`;

export async function runRetryCommand(
  argv: readonly string[],
  io?: CommandIo,
  deps?: CommandDeps,
): Promise<number> {
  return runCommand(
    {
      name: 'retry',
      help: RETRY_HELP,
      flags: { 'max-attempts': { type: 'string' } },
      positionals: { min: 1, max: 1, what: 'drop' },
    },
    argv,
    async (parsed, target, out) => {
      const drop = parsed.positionals[0] ?? '';
      const maxAttempts = integerFlag(parsed.values, 'max-attempts', 1, MAX_ATTEMPTS_LIMIT);
      // The run validate_drop will resume, by the same rule (lambdas/run/resume.ts).
      let from: ResumeFrom;
      try {
        from = resumeTarget(await readStatus(target.s3, target.bucket, drop), drop);
      } catch (error) {
        throw new CommandError(error instanceof RunError ? error.detail : messageOf(error));
      }

      const key = inboxKey(drop, TRAIN_JSON);
      const config = await readTrainJson(target, key);
      const resumed = { ...config, resume: true, ...(maxAttempts === undefined ? {} : { maxAttempts }) };
      const put = await target.s3.send(
        new PutObjectCommand({
          Bucket: target.bucket,
          Key: key,
          Body: `${JSON.stringify(resumed, null, 2)}\n`,
          ContentType: 'application/json',
        }),
      );
      const result = {
        drop,
        resumes_run: from.runId,
        error_code: from.errorCode,
        dataset_id: from.datasetId,
        train_json: `s3://${target.bucket}/${key}`,
        etag: put.ETag?.replace(/"/g, '') ?? null,
      };
      out.stdout.write(
        parsed.json
          ? json(result)
          : `hopper retry: resuming run ${from.runId} of "${drop}"${from.errorCode === null ? '' : ` (${from.errorCode})`} from dataset ${from.datasetId}: uploaded ${result.train_json} with "resume": true. Follow it with: hopper status ${drop}\n`,
      );
      return EXIT.succeeded;
    },
    io,
    deps,
  );
}

/** The drop's train.json as an object. */
async function readTrainJson(
  target: Pick<Target, 's3' | 'bucket'>,
  key: string,
): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const object = await target.s3.send(new GetObjectCommand({ Bucket: target.bucket, Key: key }));
    text = (await object.Body?.transformToString()) ?? '';
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw new CommandError(
      `s3://${target.bucket}/${key} is gone (the inbox keeps objects for a limited time): upload the drop's train.json with "resume": true yourself`,
    );
  }
  try {
    const value: unknown = JSON.parse(text.replace(/^\uFEFF/, ''));
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new CommandError(
    `s3://${target.bucket}/${key} is not a JSON object: fix it, with "resume": true, and upload it`,
  );
}
