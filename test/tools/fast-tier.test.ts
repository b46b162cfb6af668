/**
 * The fast tier keeps its promise (test/tiers.ts): a test there that starts a server or a child
 * process fails, with the tier it belongs in (test/helpers/fast-tier-guard.ts), and every entry of
 * the tier names files that exist. This file is in the fast tier; moved out of it, it fails.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAST_TIER } from '../tiers.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * What the guard says to `what` (not imported from it: importing the guard would install it, and
 * this file must fail where the tier's setup does not).
 */
function fastTierRefusal(what: string): string {
  return `${what} in the fast tier: a test that needs one belongs in the integration tier (test/tiers.ts)`;
}

/** The files a tier entry names: a path, or `<folder>/*.test.ts`. */
function filesOf(entry: string): string[] {
  if (!entry.includes('*'))
    return statSync(join(ROOT, entry), { throwIfNoEntry: false })?.isFile() ? [entry] : [];
  const folder = dirname(entry);
  return readdirSync(join(ROOT, folder))
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `${folder}/${name}`);
}

describe('the fast tier', () => {
  it('refuses a server: listening throws, naming the integration tier', () => {
    const server = createServer();
    expect(() => server.listen(0, '127.0.0.1')).toThrow(fastTierRefusal('a server listening'));
  });

  it('refuses a child process, however it is imported', () => {
    expect(() => execFileSync(process.execPath, ['--version'])).toThrow(
      fastTierRefusal('a child process (execFileSync)'),
    );
    expect(() => spawn(process.execPath, ['--version'])).toThrow(fastTierRefusal('a child process (spawn)'));
  });

  it('names files that exist, each entry at least one', () => {
    for (const entry of FAST_TIER) expect([entry, filesOf(entry).length > 0]).toEqual([entry, true]);
  });
});
