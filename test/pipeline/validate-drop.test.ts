import { HeadObjectCommand, PutObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it, vi } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import { createRuntime, priceClassOf, type Runtime } from '../../lambdas/runtime/index.js';
import { readStatus } from '../../lambdas/records/status/index.js';
import { localS3Client } from '../../local/s3/local-s3.js';
import type { RunConfig, RunState } from '../../lambdas/core/state/index.js';
import { inboxKey, statusKey } from '../../lambdas/storage/keys.js';
import { validateDropStep } from '../../lambdas/steps/validate-drop.js';
import { handler } from '../../lambdas/handlers/validate-drop.handler.js';
import {
  invocationContext,
  putDrop,
  readText,
  runStateFor,
  stepEnv,
  usePipelineFixtures,
} from '../helpers/pipeline.js';
import { exampleDrop, reviewsDrop, uniqueDrop } from '../helpers/fixtures.js';
import { runErrorOf } from '../helpers/run-errors.js';

const fixtures = usePipelineFixtures();

const REVIEWS_CSV = 'id,text\nr-1,Great value.\nr-2,Broke after a week.\n';

function validate(state: RunState): Promise<RunConfig> {
  return validateDropStep.run(state, stepEnv(fixtures.s3Runtime()));
}

function refusal(state: RunState): Promise<RunError> {
  return runErrorOf(validate(state));
}

/** What validate_drop makes of `files` put as `drop`. */
async function validated(
  files: Readonly<Record<string, string | Buffer>>,
  drop?: string,
): Promise<RunConfig> {
  return validate(await fixtures.dropped(files, drop));
}

/** The RunError validate_drop refuses `files` put as `drop` with. */
async function refusalOf(files: Readonly<Record<string, string | Buffer>>, drop?: string): Promise<RunError> {
  return refusal(await fixtures.dropped(files, drop));
}

async function etagOf(drop: string, name: string): Promise<string> {
  const { client, bucket } = fixtures.s3();
  const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name) }));
  return (head.ETag ?? '').replaceAll('"', '');
}

describe('validate_drop', () => {
  it('turns the bundled example drop into the run configuration, every file pinned', async () => {
    const files = exampleDrop();
    const state = await fixtures.dropped(files);
    const config = await validate(state);
    expect(config).toEqual({
      name: 'product-reviews',
      files: [
        {
          name: 'reviews.csv',
          bytes: Buffer.byteLength(files['reviews.csv']!),
          etag: await etagOf(state.run.drop, 'reviews.csv'),
        },
      ],
      labels: {
        name: 'labels.csv',
        bytes: Buffer.byteLength(files['labels.csv']!),
        etag: await etagOf(state.run.drop, 'labels.csv'),
      },
      encoder: null,
      decisions: 'suggested',
      maxAttempts: 3,
    });
    expect(config.files[0]!.etag).toMatch(/^[0-9a-f]{32}$/);
  });

  it("refuses a drop whose name leaves a key over S3's 1024 bytes (name_too_long, naming the limit), and takes one just within", async () => {
    const fits = await validate(await fixtures.dropped(reviewsDrop(), 'é'.repeat(462)));
    expect(fits.files.map((file) => file.name)).toEqual(['reviews.csv']);
    const long = 'é'.repeat(463);
    const error = await runErrorOf(validate(await fixtures.dropped(reviewsDrop(), long)));
    expect(error).toMatchObject({ code: 'name_too_long', retryable: false });
    expect(error.detail).toBe(
      `the drop's name "${long}" takes 926 bytes (UTF-8), and at most 925 leave room for its longest key, status/.runs/<drop>/<run id>.json, within S3's 1024 bytes: rename the folder to a shorter name and upload it again`,
    );
  });

  it('leaves files operating systems leave in folders out of the default file list, and logs them', async () => {
    const logger = new Logger({ logLevel: 'SILENT' });
    const info = vi.spyOn(logger, 'info');
    const files = { ...reviewsDrop(), '.DS_Store': Buffer.from([0, 0, 0, 1, 0xff]), 'Thumbs.db': 'x' };
    const state = await fixtures.dropped(files, uniqueDrop('system'));
    const runtime = createRuntime({ s3: fixtures.s3().client, logger, dropQuietMs: 0 });
    const config = await validateDropStep.run(state, stepEnv(runtime));
    expect(config.files.map((file) => file.name)).toEqual(['reviews.csv']);
    expect(info).toHaveBeenCalledWith('left out: files operating systems leave in folders', {
      files: ['.DS_Store', 'Thumbs.db'],
    });
  });

  it('applies the defaults of {}: the folder name, every other file as data, labels.csv as labels', async () => {
    const drop = uniqueDrop('defaults');
    const state = await fixtures.dropped(
      {
        'b.jsonl': '{"text":"x"}\n',
        'a.csv': REVIEWS_CSV,
        'labels.csv': 'id,label\nr1,positive\n',
        'train.json': '{}',
      },
      drop,
    );
    const config = await validate(state);
    expect(config.name).toBe(drop);
    expect(config.files.map((file) => file.name)).toEqual(['a.csv', 'b.jsonl']);
    expect(config.labels?.name).toBe('labels.csv');
    expect(config).toMatchObject({ encoder: null, decisions: 'service', maxAttempts: 3 });
  });

  it('has no labels file when the folder has no labels.csv, or when "files" claims it as data', async () => {
    expect((await validated({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' })).labels).toBeNull();
    const claimed = await validated({
      'a.csv': REVIEWS_CSV,
      'labels.csv': 'id,text\nx,y\n',
      'train.json': '{"files": ["a.csv", "labels.csv"]}',
    });
    expect(claimed.labels).toBeNull();
    expect(claimed.files.map((file) => file.name)).toEqual(['a.csv', 'labels.csv']);
  });

  it('takes "labels" and the other settings from train.json', async () => {
    const config = await validated({
      'a.csv': REVIEWS_CSV,
      'answers.csv': 'text,label\nGreat value.,positive\n',
      'labels.csv': 'id,text\nr-9,more data\n',
      'train.json': JSON.stringify({
        name: 'my reviews',
        labels: 'answers.csv',
        encoder: 'enc-base',
        decisions: { dedupe: 'no' },
        maxAttempts: 1,
      }),
    });
    expect(config.labels?.name).toBe('answers.csv');
    // Not the labels file any more: labels.csv is data like any other object.
    expect(config.files.map((file) => file.name)).toEqual(['a.csv', 'labels.csv']);
    expect(config).toMatchObject({
      name: 'my reviews',
      encoder: 'enc-base',
      decisions: { dedupe: 'no' },
      maxAttempts: 1,
    });
  });

  it('cuts a long folder name to the 200 characters the service takes', async () => {
    // Long, yet short enough for a file name of the local S3 (the status file is named after it).
    const drop = `${'n'.repeat(205)}-${uniqueDrop()}`;
    const config = await validated({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' }, drop);
    expect(config.name).toBe(drop.slice(0, 200));
  });

  it('as a Lambda handler: returns the config and writes the status', async () => {
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' });
    const config = await handler.withRuntime(fixtures.s3Runtime())(state, invocationContext());
    expect(config.files.map((file) => file.name)).toEqual(['a.csv']);
    const { client, bucket } = fixtures.s3();
    const status = JSON.parse(
      (await readText(client, bucket, statusKey(state.run.drop))) ?? 'null',
    ) as unknown;
    expect(status).toMatchObject({ run_id: state.run.runId, state: 'running', hopper_step: 'validate_drop' });
  });

  it("as a Lambda handler: one status write, and every S3 request in the run's count", async () => {
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' });
    const { bucket, endpoint } = fixtures.s3();
    const s3 = localS3Client(endpoint);
    const sent: string[] = [];
    s3.middlewareStack.add(
      (next, context) => (args) => {
        sent.push(`${context.commandName ?? ''} ${(args.input as { Key?: string }).Key ?? ''}`);
        return next(args);
      },
      { step: 'deserialize', name: 'recordRequests' },
    );
    try {
      const runtime = createRuntime({ s3, logger: new Logger({ logLevel: 'SILENT' }), dropQuietMs: 0 });
      await handler.withRuntime(runtime)(state, invocationContext());
      expect(sent.filter((one) => one === `PutObjectCommand ${statusKey(state.run.drop)}`)).toHaveLength(1);
      const status = (await readStatus(s3, bucket, state.run.drop))?.summary?.s3_requests;
      const counted = { put: 0, get: 0 };
      for (const one of sent.slice(0, -1)) {
        const kind = priceClassOf(one.split(' ')[0] ?? '');
        if (kind !== 'free') counted[kind] += 1;
      }
      expect(status).toEqual(counted);
    } finally {
      s3.destroy();
    }
  });

  it('as a Lambda handler: a bad train.json fails for good with its code and every problem', async () => {
    const state = await fixtures.dropped({
      'a.csv': REVIEWS_CSV,
      'train.json': '{"maxAttempts": "3", "nmae": "x"}',
    });
    const failure = await handler
      .withRuntime(fixtures.s3Runtime())(state, invocationContext())
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(RunError);
    expect((failure as RunError).name).toBe('Hopper.Failed');
    expect((failure as RunError).message).toBe(
      'invalid_train_json: train.json: unknown field "nmae" (did you mean "name"?); the fields are name, files, ' +
        'labels, encoder, decisions, maxAttempts, resume, encoders, promote; "maxAttempts" must be an integer from 1 to 10 (got "3")',
    );
  });

  it('refuses to run on a train.json other than the one that started the run', async () => {
    const { client, bucket } = fixtures.s3();
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' });
    await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: state.run.key, Body: '{"maxAttempts": 5}' }),
    );
    const changed = await refusal(state);
    expect(changed.code).toBe('drop_changed');
    expect(changed.detail).toBe(
      'train.json changed after this run started; the newer copy starts its own run',
    );

    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: state.run.key }));
    const deleted = await refusal(state);
    expect(deleted.code).toBe('drop_changed');
    expect(deleted.detail).toBe(
      'train.json was deleted after this run started; upload it again to start a run',
    );
  });

  it('names the files train.json lists that the folder does not have', async () => {
    const drop = uniqueDrop('missing');
    const error = await refusalOf(
      {
        'a.csv': REVIEWS_CSV,
        'train.json': '{"files": ["a.csv", "b.csv", "C.csv"], "labels": "answers.csv"}',
      },
      drop,
    );
    expect(error.code).toBe('missing_file');
    expect(error.detail).toBe(
      `train.json "files" names "b.csv", "C.csv" and "labels" names "answers.csv", not in inbox/${drop}/: ` +
        'add the missing files (or fix the names; they are case-sensitive), then upload train.json again',
    );
  });

  it('names data files the service would refuse by name', async () => {
    const drop = uniqueDrop('badname');
    const error = await refusalOf(
      { 'a.csv': REVIEWS_CSV, 'b\\c.csv': REVIEWS_CSV, 'train.json': '{}' },
      drop,
    );
    expect(error.code).toBe('invalid_file_name');
    expect(error.detail).toContain('"b\\\\c.csv"');
    expect(error.detail).toContain('train.json "files"');
  });

  it('names data files with a tab, a newline or ".." in their names, and says what is wrong with each', async () => {
    const drop = uniqueDrop('ctrlname');
    const error = await refusalOf(
      {
        'a.csv': REVIEWS_CSV,
        'tab\tname.csv': REVIEWS_CSV,
        'new\nline.csv': REVIEWS_CSV,
        'two..dots.csv': REVIEWS_CSV,
        'train.json': '{}',
      },
      drop,
    );
    expect(error.code).toBe('invalid_file_name');
    expect(error.detail).toContain('"tab\\tname.csv" (it has a control character');
    expect(error.detail).toContain('"new\\nline.csv" (it has a control character');
    expect(error.detail).toContain('"two..dots.csv" (it is "." or has "..")');
    expect(error.detail).not.toContain('"a.csv"');
  });

  it('names empty data files', async () => {
    const drop = uniqueDrop('empty');
    const error = await refusalOf(
      { 'a.csv': REVIEWS_CSV, 'b.csv': '', 'c.jsonl': '', 'train.json': '{}' },
      drop,
    );
    expect(error.code).toBe('empty_file');
    expect(error.detail).toBe(
      `data files in inbox/${drop}/ are empty (0 bytes): "b.csv", "c.jsonl". Give them their content, or leave them out with train.json "files"`,
    );
  });

  it('names objects in sub-folders, and ignores the folder marker of the S3 console', async () => {
    const drop = uniqueDrop('nested');
    const { client, bucket } = fixtures.s3();
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: `inbox/${drop}/`, Body: '' }));
    const flat = await validated({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' }, drop);
    expect(flat.files.map((file) => file.name)).toEqual(['a.csv']);

    await putDrop(client, bucket, drop, { 'more/b.csv': REVIEWS_CSV, 'more/deeper/c.csv': REVIEWS_CSV });
    const error = await refusal(await runStateFor(client, bucket, drop));
    expect(error.code).toBe('nested_files');
    expect(error.detail).toBe(
      `inbox/${drop}/ has files in sub-folders: "more/b.csv", "more/deeper/c.csv". A drop is one flat folder ` +
        `(plain file names only): move them into inbox/${drop}/ or delete them, then upload train.json again`,
    );
  });

  it('refuses a file list too large for the state of a run, rather than start a run that dies unreported', async () => {
    const drop = uniqueDrop('wide');
    const { client, bucket } = fixtures.s3();
    // 750 names of 220 characters: about 210 KiB of $.config. (s3rver stores each object under its
    // name plus a 22-character suffix, so a name stays well under the file system's 255 bytes.)
    const names = Array.from(
      { length: 750 },
      (_, i) => `${String(i).padStart(4, '0')}-${'x'.repeat(211)}.csv`,
    );
    for (let first = 0; first < names.length; first += 50) {
      await Promise.all(
        names
          .slice(first, first + 50)
          .map((name) =>
            client.send(
              new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name), Body: 'id,text\n1,a\n' }),
            ),
          ),
      );
    }
    const error = await refusalOf({ 'train.json': '{}' }, drop);
    expect(error.code).toBe('too_many_files');
    expect(error.detail).toMatch(
      new RegExp(
        `^the names of the 750 data files in inbox/${drop}/ are too long for one run: the list takes 2\\d\\d KiB and a run carries at most 192 KiB`,
      ),
    );
  });

  it('needs at least one data file', async () => {
    const drop = uniqueDrop('nodata');
    const error = await refusalOf({ 'labels.csv': 'id,label\n', 'train.json': '{}' }, drop);
    expect(error.code).toBe('no_data_files');
    expect(error.detail).toBe(
      `inbox/${drop}/ holds no data files to train on (it has "labels.csv", "train.json"): put the CSV or JSONL files beside train.json, then upload train.json again`,
    );
  });

  it('checks the labels file header: label, and id or text', async () => {
    const noLabel = await refusalOf({
      'a.csv': REVIEWS_CSV,
      'labels.csv': 'id,text\nr-1,x\n',
      'train.json': '{}',
    });
    expect(noLabel.code).toBe('invalid_labels_file');
    expect(noLabel.detail).toBe(
      'labels.csv: the header row has "id", "text"; it needs a "label" column and an "id" or a "text" column (missing "label"). Example header: id,label',
    );

    const noKey = await refusalOf({
      'a.csv': REVIEWS_CSV,
      'answers.csv': 'label,comment\n',
      'train.json': '{"labels": "answers.csv"}',
    });
    expect(noKey.detail).toBe(
      'answers.csv: the header row has "label", "comment"; it needs a "label" column and an "id" or a "text" column (missing "id" or "text"). Example header: id,label',
    );

    const empty = await refusalOf({ 'a.csv': REVIEWS_CSV, 'labels.csv': '', 'train.json': '{}' });
    expect(empty.code).toBe('invalid_labels_file');
    expect(empty.detail).toBe(
      'labels.csv is empty; it needs a header row with a "label" column and an "id" or a "text" column, then one row per held-out example',
    );

    const blank = await refusalOf({ 'a.csv': REVIEWS_CSV, 'labels.csv': '\n\n', 'train.json': '{}' });
    expect(blank.detail).toContain('labels.csv: the header row has no columns');
  });

  it('escapes control characters of the drop name it echoes', async () => {
    const drop = uniqueDrop('bell\u0007del\u007f');
    const error = await refusalOf({ 'train.json': '{}' }, drop);
    expect(error.code).toBe('no_data_files');
    expect(error.detail).toContain(
      `inbox/${drop.replace('\u0007', '\\u0007').replace('\u007f', '\\u007f')}/`,
    );
    // eslint-disable-next-line no-control-regex -- control characters are what must not appear
    expect(error.detail).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('reads the whole labels file: a BOM and CRLF are fine, a broken row far below the header is not', async () => {
    const rows = `\uFEFFtext,label\r\n"Great value.",positive\r\n${'x,y\r\n'.repeat(50_000)}`;
    const config = await validated({ 'a.csv': REVIEWS_CSV, 'labels.csv': rows, 'train.json': '{}' });
    expect(config.labels).toMatchObject({ name: 'labels.csv', bytes: Buffer.byteLength(rows) });
    const broken = `${rows}"never closed,negative\r\nx,y\r\n`;
    const error = await refusalOf({ 'a.csv': REVIEWS_CSV, 'labels.csv': broken, 'train.json': '{}' });
    expect(error.message).toMatch(
      /^invalid_labels_file: labels\.csv is not valid CSV: a quote opened in the row starting on line 50003 is never closed/,
    );
  });
});

describe('validate_drop while files are still arriving', () => {
  /** A runtime that takes a drop only after `quietMs` without a write. */
  function settlingRuntime(quietMs: number): Runtime {
    return createRuntime({
      s3: fixtures.s3().client,
      logger: new Logger({ logLevel: 'SILENT' }),
      dropQuietMs: quietMs,
    });
  }

  function put(drop: string, name: string, body: string): Promise<unknown> {
    const { client, bucket } = fixtures.s3();
    return client.send(new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name), Body: body }));
  }

  it('waits for a data file written after train.json and trains on it too', async () => {
    const drop = uniqueDrop('late');
    // train.json first, as `aws s3 cp --recursive` may well do; b.csv follows.
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' }, drop);
    const validating = validateDropStep.run(state, stepEnv(settlingRuntime(800)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await put(drop, 'b.csv', REVIEWS_CSV);

    const config = await validating;
    expect(config.files.map((file) => file.name)).toEqual(['a.csv', 'b.csv']);
  });

  it('fails with files_still_arriving, naming them, when the folder does not fall quiet in time', async () => {
    const drop = uniqueDrop('busy');
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' }, drop);
    // 12 s left in the invocation: 10 s are kept to report, so it gives up after about 2 s.
    const writing = { done: false };
    const validating = runErrorOf(validateDropStep.run(state, stepEnv(settlingRuntime(800), 12_000))).finally(
      () => (writing.done = true),
    );
    // A writer that keeps going until then (bounded: at most 20 files, 250 ms apart).
    for (let index = 0; index < 20 && !writing.done; index++) {
      await put(drop, `part-${String(index)}.csv`, REVIEWS_CSV);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    const error = await validating;
    expect(error.code).toBe('files_still_arriving');
    expect(error.detail).toContain(`files were still arriving in inbox/${drop}/`);
    expect(error.detail).toContain('"part-0.csv"');
    expect(error.detail).toContain('upload the data files first, then train.json again, last');
  });

  it('takes a drop that is already quiet without waiting for it again', async () => {
    const drop = uniqueDrop('quiet');
    const state = await fixtures.dropped({ 'a.csv': REVIEWS_CSV, 'train.json': '{}' }, drop);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const started = Date.now();
    await validateDropStep.run(state, stepEnv(settlingRuntime(200)));
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
