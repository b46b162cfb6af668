import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OUT_LOCK_FILE, OutFolderError, prepareOutFolder } from '../../local/cli/out-folder.js';

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

/** The pid of a process that has ended (and so holds no lock). */
async function endedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  if (child.pid === undefined) throw new Error('the child process did not start');
  return child.pid;
}

describe("prepareOutFolder's lock on <out>/<drop>/", () => {
  it('refuses a second run on the folder while the first holds it, naming the holder and what to do', async () => {
    const out = join(work, 'out');
    const first = await prepareOutFolder(out, 'reviews');
    const lock = join(out, 'reviews', OUT_LOCK_FILE);
    expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    const second = prepareOutFolder(out, 'reviews');
    await expect(second).rejects.toThrow(OutFolderError);
    await expect(second).rejects.toThrow(
      `--out: another hopper run (pid ${String(process.pid)} on ${hostname()}) is saving a model in ${join(out, 'reviews')}: wait for it to finish, or give another --out`,
    );
    // Another drop in the same --out is another folder, another lock.
    const other = await prepareOutFolder(out, 'other');
    await other.release();
    await first.release();
    expect(await exists(lock)).toBe(false);
    const third = await prepareOutFolder(out, 'reviews');
    await third.release();
  });

  it('takes over the lock of a process that has ended', async () => {
    const folder = join(work, 'out', 'reviews');
    await mkdir(folder, { recursive: true });
    const lock = join(folder, OUT_LOCK_FILE);
    await writeFile(lock, JSON.stringify({ pid: await endedPid(), host: hostname(), token: 'old' }));
    const taken = await prepareOutFolder(join(work, 'out'), 'reviews');
    expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid });
    await taken.release();
    expect(await readdir(folder)).toEqual([]);
  });

  it('leaves alone a lock it cannot judge: another host, or not a lock it wrote', async () => {
    const folder = join(work, 'out', 'reviews');
    await mkdir(folder, { recursive: true });
    const lock = join(folder, OUT_LOCK_FILE);
    for (const text of [
      JSON.stringify({ pid: await endedPid(), host: `not-${hostname()}`, token: 'x' }),
      'garbage',
    ]) {
      await writeFile(lock, text);
      const refused = prepareOutFolder(join(work, 'out'), 'reviews');
      await expect(refused).rejects.toThrow(OutFolderError);
      await expect(refused).rejects.toThrow(`If no run is using it, delete ${lock}`);
      expect(await readFile(lock, 'utf8')).toBe(text);
    }
  });

  it('lets exactly one of many runs starting at once on a stale lock take it', async () => {
    const folder = join(work, 'out', 'reviews');
    await mkdir(folder, { recursive: true });
    await writeFile(
      join(folder, OUT_LOCK_FILE),
      JSON.stringify({ pid: await endedPid(), host: hostname(), token: 'old' }),
    );
    const attempts = await Promise.allSettled(
      Array.from({ length: 8 }, () => prepareOutFolder(join(work, 'out'), 'reviews')),
    );
    const taken = attempts.flatMap((attempt) => (attempt.status === 'fulfilled' ? [attempt.value] : []));
    expect(taken).toHaveLength(1);
    for (const attempt of attempts) {
      if (attempt.status === 'rejected') expect(attempt.reason).toBeInstanceOf(OutFolderError);
    }
    await taken[0]?.release();
    expect(await readdir(folder)).toEqual([]);
  });
});
