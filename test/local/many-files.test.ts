/**
 * Drops of more files than the service takes in one dataset (MAX_FILES): in local mode the drop
 * is listed whole (the local S3 pages past 1000 keys) and the run fails with the service's limit
 * and what to do, not a storage error; `hopper run` says so, with the run's own rules, before
 * uploading anything.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_FILES } from '../../lambdas/drop/train-json.js';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { hopperWithin } from '../helpers/hopper-cli.js';
import { dropAndRun, useLocalMode } from '../helpers/local-mode.js';

const fixture = useLocalMode();

/** `count` one-row data files, by name. */
function dataFiles(count: number): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, index) => [
      `part-${String(index).padStart(4, '0')}.csv`,
      `id,text\nr${String(index)},x\n`,
    ]),
  );
}

describe('a drop of more data files than the service takes, dropped by an S3 client', () => {
  it('fails with too_many_files naming the limit and what to do, not a storage error', async () => {
    const local = await fixture.start();
    // 1,002 uploads before the run starts: the run's deadlines count from the last (dropAndRun);
    // the test's own bound only backs them.
    const run = await dropAndRun(local, 'many', { ...dataFiles(MAX_FILES + 1), [TRAIN_JSON]: '{}' }, 50_000);
    expect(run.status?.error?.code).toBe('too_many_files');
    expect(run.status?.error?.message).toContain(`holds ${String(MAX_FILES + 1)} data files`);
    expect(run.status?.error?.message).toContain(`at most ${String(MAX_FILES)} per dataset`);
    expect(run.status?.error?.message).toContain('train.json "files"');
  }, 300_000);
});

describe('hopper run of a folder with more data files than the service takes', () => {
  let work: string;
  beforeEach(async () => {
    work = await mkdtemp(join(tmpdir(), 'hopper-many-files-'));
  });
  afterEach(async () => {
    await rm(work, { recursive: true, force: true });
  });

  async function folderWith(files: Record<string, string>): Promise<string> {
    const folder = join(work, 'many');
    await mkdir(folder);
    for (const [name, text] of Object.entries(files)) await writeFile(join(folder, name), text);
    return folder;
  }

  it('refuses it before starting anything, naming the limit and what to do, exit 1', async () => {
    const folder = await folderWith({ ...dataFiles(MAX_FILES + 1), [TRAIN_JSON]: '{}' });
    const result = await hopperWithin(['run', folder], 25_000);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    // The run's own words (ValidateDrop's too_many_files), as hopper check says them: of the folder.
    expect(result.stderr).toBe(
      `hopper run: too_many_files: ${folder}/ holds ${String(MAX_FILES + 1)} data files and the service takes at most ${String(MAX_FILES)} per dataset: list the files to send in train.json "files"\n`,
    );
  });
});
