/**
 * A real browser for the console's tests: Debian's chromium (installed by .ci/run when missing;
 * nothing is downloaded at run time), driven by playwright-core, headless, with a fresh profile
 * and nothing that would reach beyond loopback.
 */
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Every wait in a browser test is bounded by this (a run of the brisk service takes ~1 s). */
export const BROWSER_WAIT_MS = 20_000;

export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  await access(CHROMIUM).catch(() => {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does`,
    );
  });
  const profile = await mkdtemp(join(tmpdir(), 'hopper-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: BROWSER_WAIT_MS,
    viewport: { width: 1400, height: 1000 },
    acceptDownloads: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context.setDefaultTimeout(BROWSER_WAIT_MS);
  context.setDefaultNavigationTimeout(BROWSER_WAIT_MS);
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
