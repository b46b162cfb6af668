/**
 * Measured clients of the check benchmark (bench/check.ts): `hopper check --json` of a drop
 * folder, and the floor of listing that folder and reading every file of it once.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { runCheckCommand } from '../../local/cli/check.js';
import type { ClientResult, Measure } from '../harness/protocol.js';

/** `hopper check <folder> --json`, in this process, its output kept (and checked) but not printed. */
export async function check(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  let stdout = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      stdout += chunk.toString();
      done();
    },
  });
  const io = { stdout: sink, stderr: sink };
  const { result: code, measurement } = await measure(() =>
    runCheckCommand([String(args.folder), '--json'], io),
  );
  const files = (JSON.parse(stdout) as { files: unknown[] }).files.length;
  if (code !== 0) throw new Error(`hopper check refused the folder: ${stdout}`);
  return { ...measurement, files };
}

/** The folder listed (recursively, as check lists it) and every file read whole, one after another. */
export async function listAndRead(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const folder = String(args.folder);
  const { result: bytes, measurement } = await measure(async () => {
    let total = 0;
    for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) total += (await readFile(join(entry.parentPath, entry.name))).length;
    }
    return total;
  });
  return { ...measurement, bytes };
}
