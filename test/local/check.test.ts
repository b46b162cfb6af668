/**
 * `hopper check <folder>`: a good drop's files, bytes, credits and estimated cost, as text and as
 * --json; a folder that is no drop; and `hopper run` refusing what check refuses, in the same
 * words, before local mode starts or anything is sent (test/corpus/bad-input/check.test.ts holds
 * check's agreement with the run on every case of the corpus).
 */
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TrainJson } from '../../lambdas/drop/train-json.js';
import { judgeDrop } from '../../lambdas/drop/validate.js';
import { runCheckCommand, verdictOf, type CheckVerdict } from '../../local/cli/check.js';
import { readDropFolder } from '../../local/cli/drop-folder.js';
import { runRunCommand } from '../../local/cli/run.js';
import { ENDPOINTS, startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { hopper, SUBPROCESS_TEST_MS } from '../helpers/hopper-cli.js';
import { writeDropFolder } from '../helpers/fixtures.js';

let work = '';
let service: SimulatedService | undefined;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-check-'));
  service = await startSimulatedService({});
});
afterAll(async () => {
  await service?.close();
  await rm(work, { recursive: true, force: true });
});

/** A folder `name` in the test's folder holding `files`. */
function folderOf(name: string, files: Readonly<Record<string, string | Buffer>>): Promise<string> {
  return writeDropFolder(work, name, files);
}

async function checkJson(folder: string): Promise<{ code: number; verdict: CheckVerdict }> {
  const result = await runCommandCaptured(runCheckCommand, [folder, '--json'], {});
  expect(result.stderr).toBe('');
  return { code: result.code, verdict: JSON.parse(result.stdout) as CheckVerdict };
}

const GOOD = {
  'a.csv': 'id,text\nr1,good\n',
  'b.csv': 'id,text\nr2,bad\n',
  'c.jsonl': '{"id":"r3","text":"fine"}\n',
  'answers.csv': 'id,label\nr1,positive\n',
  'notes.txt': 'not sent',
  'train.json': '{"files": ["a.csv", "b.csv", "c.jsonl"], "labels": "answers.csv", "maxAttempts": 2}',
};

describe('hopper check of a drop that would go through', () => {
  it('prints every file with its bytes and what it is sent as, the credits it may spend and the estimated AWS cost; exit 0', async () => {
    const folder = await folderOf('good', GOOD);
    const { code, verdict } = await checkJson(folder);
    expect(code).toBe(0);
    expect(verdict).toEqual({
      drop: 'good',
      error: null,
      unless: null,
      files: [
        { name: 'a.csv', bytes: 16, sent_as: 'data' },
        { name: 'answers.csv', bytes: 21, sent_as: 'labels' },
        { name: 'b.csv', bytes: 15, sent_as: 'data' },
        { name: 'c.jsonl', bytes: 26, sent_as: 'data' },
        { name: 'notes.txt', bytes: 8, sent_as: null },
        { name: 'train.json', bytes: 83, sent_as: 'settings' },
      ],
      left_out: [],
      bytes: 16 + 21 + 15 + 26,
      credits: { per_attempt: 1, max_attempts: 2, trainings: 1, at_most: 2 },
      aws: {
        // 26 x $0.000025 + 0.18 x $0.0000133334 + 11 x $0.0000002 + 20 x $0.000005 + 23 x $0.0000004
        usd: { step_functions: 0.00065, lambda: 0.0000046, s3: 0.0001092, total: 0.0007638 },
        // A typical run: 11 invocations, 26 transitions, 20 PUTs, 20 GETs, 0.15 GB-s, and per data file a GET and 0.01 GB-s.
        usage: {
          lambda_invocations: 11,
          lambda_gb_seconds: 0.18,
          state_transitions: 26,
          s3_requests: { put: 20, get: 23 },
        },
        prices: { region: 'us-east-1', as_of: expect.any(String) as string },
      },
      checked_when_the_run_starts: [
        expect.stringContaining('files_still_arriving') as string,
        expect.stringContaining('unknown_encoder') as string,
        expect.stringContaining('(credit_budget)') as string,
      ],
    });
  });

  it('says what would still stop a drop without a labels file: labels_required, if the service holds out examples', async () => {
    const { 'answers.csv': _labels, ...unlabelled } = GOOD;
    const folder = await folderOf('no-labels', {
      ...unlabelled,
      'train.json': '{"files": ["a.csv", "b.csv", "c.jsonl"]}',
    });
    const { code, verdict } = await checkJson(folder);
    expect(code).toBe(0);
    expect(verdict.error).toBeNull();
    expect(verdict.unless).toEqual({
      code: 'labels_required',
      message: expect.stringContaining('labels.csv') as string,
    });
    const text = await runCommandCaptured(runCheckCommand, [folder], {});
    expect(text.stdout).toMatch(
      /^drop "no-labels": would go through, unless the service holds out examples to label: the drop has no labels file, .*\(labels_required\)\n/,
    );
  });

  it(
    'says the same as text, from the hopper command',
    async () => {
      const folder = await folderOf('good-text', GOOD);
      const result = await hopper(['check', folder]);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^drop "good-text": would go through\n/);
      expect(result.stdout).toContain('\nanswers.csv  21     labels\n');
      expect(result.stdout).toContain('\nnotes.txt    8      -\n');
      expect(result.stdout).toContain('\nsent: 78 B\n');
      expect(result.stdout).toContain(
        "\ncredits: 1 kept if a training succeeds; up to 2 taken on the way, 1 per training started (maxAttempts 2), a failed one's given back\n",
      );
      expect(result.stdout).toContain(
        '\nestimated AWS cost: $0.00076 for a run that trains at its first attempt',
      );
      expect(result.stdout).toContain('\nchecked when the run starts:\n  - the folder is taken once');
    },
    SUBPROCESS_TEST_MS,
  );

  it('leaves files operating systems leave in folders out of the default file list, and says so', async () => {
    const system = {
      '.DS_Store': '\0\0\0\u0001Bud1',
      '._a.csv': '\0\u0005',
      'Thumbs.db': 'x',
      'desktop.ini': '[x]',
    };
    const folder = await folderOf('system-files', { 'a.csv': GOOD['a.csv'], ...system, 'train.json': '{}' });
    const { code, verdict } = await checkJson(folder);
    expect(code).toBe(0);
    expect(verdict.left_out).toEqual(['.DS_Store', '._a.csv', 'Thumbs.db', 'desktop.ini']);
    expect(verdict.files.filter((file) => file.sent_as === 'data').map((file) => file.name)).toEqual([
      'a.csv',
    ]);
    const text = await runCommandCaptured(runCheckCommand, [folder], {});
    expect(text.stdout).toContain(
      '\nleft out: ".DS_Store", "._a.csv", "Thumbs.db", "desktop.ini" (files operating systems leave in folders; name them in train.json "files" to send them)\n',
    );
    // Named in "files", such a file is sent.
    const named = await folderOf('system-named', {
      '.data.csv': GOOD['a.csv'],
      'train.json': '{"files": [".data.csv"]}',
    });
    expect((await checkJson(named)).verdict).toMatchObject({ error: null, left_out: [] });
  });

  it('reads every data file whole for UTF-8; the run reads them smallest first up to its limit, and leaves the rest to the service', async () => {
    const latin1 = Buffer.from('text\ntr\xe8s bien\n'.repeat(10), 'latin1');
    const folder = await readDropFolder(
      await folderOf('latin1-big', { 'a.csv': 'text\nok\n', 'b.csv': latin1, 'train.json': '{}' }),
    );
    await expect(judgeDrop(folder)).rejects.toMatchObject({
      code: 'dataset_unreadable',
      detail: expect.stringContaining('b.csv is not UTF-8 text: the byte at offset 7 (0xe8)') as unknown,
    });
    await expect(judgeDrop({ ...folder, textCheckBytes: latin1.length })).resolves.toHaveProperty('config');
  });

  it('states "resume": true, which needs the drop\'s status in the bucket, rather than judging it', async () => {
    const { code, verdict } = await checkJson(
      await folderOf('resumed', { ...GOOD, 'train.json': '{"resume": true}' }),
    );
    expect(code).toBe(0);
    expect(verdict.checked_when_the_run_starts.at(-1)).toMatch(/^"resume": true: .*\(not_resumable\)$/);
  });

  it('counts a training per encoder of train.json "encoders", and says "all" depends on the service', async () => {
    const folder = await readDropFolder(await folderOf('sweep', GOOD));
    const { config } = await judgeDrop(folder);
    const sweep = (encoders: unknown) =>
      verdictOf(folder, { config, trainJson: { encoders } as TrainJson, leftOut: [] });
    expect(sweep(['enc-a', 'enc-b', 'enc-c']).credits).toEqual({
      per_attempt: 1,
      max_attempts: 2,
      trainings: 3,
      at_most: 6,
    });
    expect(sweep('all').credits).toMatchObject({ trainings: 'all', at_most: null });
  });
});

describe('hopper check of a drop that would not go through', () => {
  it('prints the code and message the run would stop with, and no credits or cost; exit 1', async () => {
    const folder = await folderOf('empty-data', { ...GOOD, 'b.csv': '' });
    const { code, verdict } = await checkJson(folder);
    expect(code).toBe(1);
    expect(verdict).toMatchObject({
      error: {
        code: 'empty_file',
        message: `data files in ${folder}/ are empty (0 bytes): "b.csv". Give them their content, or leave them out with train.json "files"`,
      },
      credits: null,
      aws: null,
      bytes: 0,
    });
    expect(verdict.files.every((file) => file.sent_as === null)).toBe(true);
    const text = await runCommandCaptured(runCheckCommand, [folder], {});
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      `drop "empty-data": refused: empty_file: data files in ${folder}/ are empty`,
    );
  });

  it('speaks of the folder on disk and of checking it again, not of the bucket and uploads', async () => {
    const folder = await folderOf('typo', { ...GOOD, 'train.json': '{"files": ["a.csv", "A.csv"]}' });
    const { verdict } = await checkJson(folder);
    expect(verdict.error).toEqual({
      code: 'missing_file',
      message: `train.json "files" names "A.csv", not in ${folder}/: add the missing files (or fix the names; they are case-sensitive), then run hopper check again`,
    });
    const nested = await folderOf('nested', { ...GOOD, 'more/b.csv': 'text\nx\n' });
    expect((await checkJson(nested)).verdict.error?.message).toMatch(
      new RegExp(`^${nested}/ has files in sub-folders: "more/b.csv"\\..*, then run hopper check again$`),
    );
  });

  it('refuses a folder that is no drop (no train.json, a link out of it) with a code, exit 1', async () => {
    const bare = await folderOf('bare', { 'a.csv': 'text\nx\n' });
    expect(await runCommandCaptured(runCheckCommand, [bare, '--json'], {})).toEqual({
      code: 1,
      stdout: `${JSON.stringify({ error: { code: 'not_a_drop', message: `${bare} has no train.json, which starts a run: add one ({} is valid, see docs/drop-format.md)` } }, null, 2)}\n`,
      stderr: '',
    });
    const linked = await folderOf('linked', GOOD);
    await symlink(join(work, 'bare', 'a.csv'), join(linked, 'more.csv'));
    const result = await runCommandCaptured(runCheckCommand, [linked], {});
    expect(result).toMatchObject({ code: 1, stdout: '' });
    // The text names the code its --json gives.
    expect(result.stderr).toMatch(/^hopper check: linked_files: .* holds symbolic links: "more.csv" -> /);
    const text = await runCommandCaptured(runCheckCommand, [bare], {});
    expect(text).toEqual({
      code: 1,
      stdout: '',
      stderr: `hopper check: not_a_drop: ${bare} has no train.json, which starts a run: add one ({} is valid, see docs/drop-format.md)\n`,
    });
  });
});

describe('hopper run refuses what hopper check refuses, before anything is sent', () => {
  it.each([
    ['invalid_train_json', { ...GOOD, 'train.json': '{"maxAttempt": 2}' }],
    ['nested_files', { ...GOOD, 'old/a.csv': 'id,text\nr9,old\n' }],
    ['missing_file', { ...GOOD, 'train.json': '{"files": ["a.csv", "z.csv"]}' }],
    ['invalid_labels_file', { ...GOOD, 'answers.csv': 'id,answer\nr1,positive\n' }],
    ['empty_file', { ...GOOD, 'b.csv': '' }],
    ['not_a_drop', { 'a.csv': 'id,text\nr1,good\n' }],
    ['not_a_drop', undefined],
  ])('%s: the same code and message, exit 1, and no request to the service', async (code, files) => {
    const folder =
      files === undefined ? join(work, 'no-such-folder') : await folderOf(`refused-${code}`, files);
    const check = await runCommandCaptured(runCheckCommand, [folder, '--json'], {});
    expect(check.code).toBe(1);
    const { error } = JSON.parse(check.stdout) as Pick<CheckVerdict, 'error'>;
    expect(error?.code).toBe(code);
    const run = await runCommandCaptured(
      runRunCommand,
      [
        folder,
        '--service-url',
        service?.apiUrl ?? '',
        '--api-key',
        service?.apiKey ?? '',
        '--out',
        join(work, 'out'),
      ],
      {},
    );
    // Refused before local mode started: it prints where its S3 and service are once it has. The
    // advice names the command to run again.
    const message = (error?.message ?? '').replace('run hopper check again', 'run hopper run again');
    expect(run).toEqual({ code: 1, stdout: '', stderr: `hopper run: ${code}: ${message}\n` });
    expect(ENDPOINTS.reduce((sum, endpoint) => sum + (service?.requestCount(endpoint) ?? 0), 0)).toBe(0);
  });
});
