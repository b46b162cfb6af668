/**
 * `hopper run --out`: a folder the model cannot go to is refused before the run starts (no
 * credit spent), and a model that cannot be saved after the run is kept and said where.
 * dist/hopper.mjs spawned as a user runs it.
 */
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { modelBytesAt } from '../../local/service/index.js';
import {
  hopperWithin,
  permissionBoundUser,
  smallDrop,
  startHopper,
  type Finished,
} from '../helpers/hopper-cli.js';
import { withTimeout } from '../../testkit/timeout.js';
import { EXAMPLE_FOLDER } from '../helpers/fixtures.js';

const execFileAsync = promisify(execFile);

let work: string;
const cleanups: (() => Promise<void>)[] = [];
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-run-out-'));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(work, { recursive: true, force: true });
});

/** `hopper run` refused before local mode started: exit 2, nothing on stdout. */
function expectRefusedUpFront(result: Finished): void {
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^hopper run: --out: /);
}

async function run(args: readonly string[]): Promise<Finished> {
  return hopperWithin(['run', ...args], 25_000);
}

describe('hopper run --out, checked before the run starts', () => {
  it('refuses an --out that is a file, naming it', async () => {
    const drop = await smallDrop(work, 'reviews');
    const file = join(work, 'models.txt');
    await writeFile(file, 'not a folder');
    const result = await run([drop, '--out', file]);
    expectRefusedUpFront(result);
    expect(result.stderr).toContain(`${file} is a file`);
    expect(await readFile(file, 'utf8')).toBe('not a folder');
  });

  it('refuses an --out that cannot be created (a file on its way), naming that file', async () => {
    const drop = await smallDrop(work, 'reviews');
    const file = join(work, 'blocker');
    await writeFile(file, '');
    const result = await run([drop, '--out', join(file, 'models')]);
    expectRefusedUpFront(result);
    expect(result.stderr).toContain(`${file} is a file`);
  });

  it('refuses when <out>/<drop> is a file', async () => {
    const drop = await smallDrop(work, 'reviews');
    const out = join(work, 'out');
    await mkdir(out);
    await writeFile(join(out, 'reviews'), '');
    const result = await run([drop, '--out', out]);
    expectRefusedUpFront(result);
    expect(result.stderr).toContain(`${join(out, 'reviews')} is a file`);
  });

  it('refuses when model.onnx in <out>/<drop> is a folder (the model could not replace it)', async () => {
    const drop = await smallDrop(work, 'reviews');
    const out = join(work, 'out');
    await mkdir(join(out, 'reviews', 'model.onnx'), { recursive: true });
    const result = await run([drop, '--out', out]);
    expectRefusedUpFront(result);
    expect(result.stderr).toContain(`${join(out, 'reviews', 'model.onnx')} is a folder`);
  });

  it('refuses an --out the user cannot write to, naming it', async () => {
    const user = permissionBoundUser();
    // The drop must be readable by that user; the out folder is not writable by anyone but root.
    await chmod(work, 0o755);
    const drop = await smallDrop(work, 'reviews');
    await chmod(drop, 0o755);
    const out = join(work, 'read-only');
    await mkdir(out, { mode: 0o555 });
    await chmod(out, 0o555);
    const result = await hopperWithin(['run', drop, '--out', out], 25_000, {}, user);
    expectRefusedUpFront(result);
    expect(result.stderr).toContain(`cannot create ${join(out, 'reviews')}`);
    expect(result.stderr).toContain('permission');
  });
});

describe('hopper run when the model cannot be saved after the run', () => {
  it('prints the model id and where the model is kept, keeps it there, and exits 3', async () => {
    const drop = join(work, 'reviews');
    await cp(EXAMPLE_FOLDER, drop, { recursive: true });
    // A space in the path: the printed cp lines must still work in a shell.
    const out = join(work, 'my out');
    const running = startHopper(['run', drop, '--out', out, '--wait-ms', '20']);
    let result: Finished;
    try {
      // Past the --out check, before the run ends: <out>/<drop> becomes a file, so writing the
      // model there fails as a full or vanished disk would.
      await running.waitFor('hopper: dropping', 25_000);
      await rm(join(out, 'reviews'), { recursive: true, force: true });
      await mkdir(out, { recursive: true });
      await writeFile(join(out, 'reviews'), 'in the way');
      result = await withTimeout(running.finished(), 'hopper run did not end', 25_000);
    } finally {
      await running.stop();
    }
    // The kept folder outlives the command: the test removes it, whatever it finds.
    const kept = /delete (\S+) once/.exec(result.stderr)?.[1] ?? '';
    if (kept !== '') cleanups.push(() => rm(kept, { recursive: true, force: true }));
    expect(result.stderr).toMatch(
      /hopper run: the run succeeded, but the model could not be saved to .*out\/reviews: /,
    );
    const id = /model (\S+) is kept in the local bucket/.exec(result.stderr)?.[1];
    expect(id).toBeDefined();
    expect(result.stderr).toContain(`s3://hopper-local/models/reviews/${String(id)}/`);
    // The lines to copy the model out by hand name files that outlive the command.
    const copies = [...result.stderr.matchAll(/^ {2}cp '([^']+)' '([^']+)'$/gm)];
    expect(copies.map((copy) => copy[2])).toEqual([
      join(out, 'reviews', 'model.onnx'),
      join(out, 'reviews', 'model.json'),
    ]);
    expect(kept).toMatch(/hopper-s3-/);
    // The printed lines, run by a shell once the folder is free, fetch the whole model.
    await rm(join(out, 'reviews'));
    await mkdir(join(out, 'reviews'));
    for (const copy of copies) await execFileAsync('sh', ['-c', copy[0].trim()]);
    const onnx = await readFile(join(out, 'reviews', 'model.onnx'));
    expect(onnx.equals(modelBytesAt(id ?? '', 0, onnx.length))).toBe(true);
    const record = JSON.parse(await readFile(join(out, 'reviews', 'model.json'), 'utf8')) as {
      model: { id: string; onnx_bytes: number };
    };
    expect(record.model.id).toBe(id);
    expect(onnx.length).toBe(record.model.onnx_bytes);
    expect((await stat(kept)).isDirectory()).toBe(true);
    expect(result.code).toBe(3);
  });
});

describe('two hopper run into one --out at once', () => {
  it('runs one and refuses the other up front; model.onnx and model.json are of one model', async () => {
    const drop = join(work, 'reviews');
    await cp(EXAMPLE_FOLDER, drop, { recursive: true });
    const out = join(work, 'out');
    const runs = [0, 1].map(() => startHopper(['run', drop, '--out', out, '--wait-ms', '20']));
    let results: Finished[];
    try {
      results = await withTimeout(
        Promise.all(runs.map((running) => running.finished())),
        'two hopper run did not end',
        40_000,
      );
    } finally {
      await Promise.all(runs.map((running) => running.stop()));
    }
    const codes = results.map((result) => result.code).sort();
    expect(codes, results.map((result) => result.stderr).join('\n---\n')).toEqual([0, 2]);
    const refused = results.find((result) => result.code === 2);
    expect(refused?.stdout).toBe('');
    expect(refused?.stderr).toMatch(
      /^hopper run: --out: another hopper run \(pid \d+ on .+\) is saving a model in .*out\/reviews: wait for it to finish/,
    );
    expect((await readdir(join(out, 'reviews'))).sort()).toEqual(['model.json', 'model.onnx']);
    const record = JSON.parse(await readFile(join(out, 'reviews', 'model.json'), 'utf8')) as {
      model: { id: string };
    };
    const onnx = await readFile(join(out, 'reviews', 'model.onnx'));
    expect(onnx.equals(modelBytesAt(record.model.id, 0, onnx.length))).toBe(true);
  }, 60_000);
});
