import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutFolderError, prepareOutFolder } from '../../local/mode/out-folder.js';

let work: string;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-out-folder-'));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null)) !== null;
}

describe('prepareOutFolder', () => {
  it('makes <out>/<drop>/ before the run, and removes what it made if nothing was saved', async () => {
    const out = join(work, 'a', 'out');
    const folder = await prepareOutFolder(out, 'reviews');
    expect(folder.path).toBe(join(out, 'reviews'));
    expect((await stat(folder.path)).isDirectory()).toBe(true);
    await folder.release();
    expect(await readdir(work)).toEqual([]);
  });

  it('keeps the folders once a model is in them, and folders it did not make', async () => {
    const out = join(work, 'out');
    await mkdir(out);
    const saved = await prepareOutFolder(out, 'saved');
    await writeFile(join(saved.path, 'model.onnx'), 'model');
    await saved.release();
    expect(await exists(join(saved.path, 'model.onnx'))).toBe(true);

    const empty = await prepareOutFolder(out, 'empty');
    await empty.release();
    expect(await readdir(out)).toEqual(['saved']);
  });

  it('refuses a model.json that is a folder, and leaves the folder as it found it', async () => {
    await mkdir(join(work, 'out', 'reviews', 'model.json'), { recursive: true });
    const refused = prepareOutFolder(join(work, 'out'), 'reviews');
    await expect(refused).rejects.toThrow(OutFolderError);
    await expect(refused).rejects.toThrow(`${join(work, 'out', 'reviews', 'model.json')} is a folder`);
    // The folder existed before: it stays, with what the user put there.
    expect(await readdir(join(work, 'out', 'reviews'))).toEqual(['model.json']);
  });
});
