/**
 * The local console for tests: local mode (brisk, see local-mode.ts) with its console, closed
 * after each test, and drops sent the way the console's page sends them (check, then each
 * file with train.json last) over real HTTP.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { startConsole, type LocalConsole } from '../../local/console/index.js';
import type { RunPage } from '../../local/console/runs.js';
import type { LocalMode, LocalModeOptions } from '../../local/emulator/local-mode.js';
import { RUN_TIMEOUT_MS, useLocalMode } from './local-mode.js';

export interface ConsoleFixture {
  start(options?: LocalModeOptions): Promise<{ local: LocalMode; console: LocalConsole }>;
}

export function useConsole(): ConsoleFixture {
  const localMode = useLocalMode();
  const consoles: LocalConsole[] = [];
  // Registered after useLocalMode's: vitest runs afterEach hooks in reverse, so consoles close first.
  afterEach(async () => {
    await Promise.all(consoles.splice(0).map((started) => started.close()));
  });
  return {
    async start(options = {}) {
      const local = await localMode.start(options);
      const console = await startConsole(
        local,
        options.dataDir === undefined ? {} : { dataDir: options.dataDir },
      );
      consoles.push(console);
      return { local, console };
    },
  };
}

/** Every file of `folder`, by name relative to it (plain files only). */
export async function folderFiles(folder: string): Promise<Record<string, Buffer>> {
  const files: Record<string, Buffer> = {};
  for (const name of await readdir(folder)) files[name] = await readFile(join(folder, name));
  return files;
}

/**
 * Drops `files` as `drop` through the console's API, as its page does (its names and sizes and
 * train.json's bytes to check first); the answer that refused it, if one did.
 */
export async function dropThroughConsole(
  console: LocalConsole,
  drop: string,
  files: Readonly<Record<string, Buffer | string>>,
): Promise<{ ok: true } | { ok: false; status: number; error: string }> {
  const check = await fetch(new URL('/api/drops/check', console.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      drop,
      files: Object.entries(files).map(([name, bytes]) => ({ name, bytes: Buffer.byteLength(bytes) })),
      trainJson: [...Buffer.from(files[TRAIN_JSON] ?? '')],
    }),
  });
  if (!check.ok)
    return { ok: false, status: check.status, error: ((await check.json()) as { error: string }).error };
  const names = Object.keys(files).sort((a, b) => Number(a === TRAIN_JSON) - Number(b === TRAIN_JSON));
  for (const name of names) {
    const url = new URL(`/api/drops/${encodeURIComponent(drop)}/files`, console.url);
    url.searchParams.set('name', name);
    const put = await fetch(url, { method: 'PUT', body: files[name] });
    if (!put.ok)
      return { ok: false, status: put.status, error: ((await put.json()) as { error: string }).error };
  }
  return { ok: true };
}

/** GET `path` from the console as JSON, with its raw text (to look for secrets in). */
// T is the answer's shape as the caller knows it: a cast, as response.json() would be.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export async function consoleJson<T>(
  console: LocalConsole,
  path: string,
): Promise<{ status: number; body: T; text: string }> {
  const response = await fetch(new URL(path, console.url));
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as T, text };
}

/** Polls the run list until `drop` has `runs` runs and the newest has ended (bounded by RUN_TIMEOUT_MS). */
export async function endedRun(
  console: LocalConsole,
  drop: string,
  runs = 1,
): Promise<RunPage['runs'][number]> {
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const answer = await consoleJson<RunPage>(console, `/api/runs?drop=${encodeURIComponent(drop)}`);
    if (answer.status !== 200)
      throw new Error(`GET /api/runs answered ${String(answer.status)}: ${answer.text}`);
    const page = answer.body;
    const run = page.runs[0];
    if (page.total >= runs && run !== undefined && run.state !== 'running') return run;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no run of ${drop} ended within ${String(RUN_TIMEOUT_MS)} ms`);
}
