/**
 * A real browser for the console's tests, driven by playwright-core, headless, with a fresh
 * profile and nothing that would reach beyond loopback. Which browser, first found wins:
 *
 * 1. `HOPPER_CHROMIUM`: the path of a Chrome or Chromium binary;
 * 2. an installed Chrome or Chromium at a usual path (INSTALLED_BROWSERS);
 * 3. the Chromium the devDependency `@sparticuz/chromium` ships inside its npm package
 *    (brotli-compressed), unpacked once into node_modules/.cache/hopper-chromium/<version>/.
 *
 * So `npm ci && npm test` needs no browser installed by hand, and nothing is downloaded at test
 * time: npm ci fetched the package from the registry like any other.
 */
import { constants, createReadStream, createWriteStream } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { brotliDecompressSync, createBrotliDecompress } from 'node:zlib';
import { chromium, type BrowserContext } from 'playwright-core';

/** Where Chrome and Chromium are installed on Debian, Ubuntu, Fedora and macOS. */
export const INSTALLED_BROWSERS: readonly string[] = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium',
];

/** Every wait in a browser test is bounded by this (a run of the brisk service takes ~1 s). */
export const BROWSER_WAIT_MS = 20_000;

/** The window the tests and their screenshots use: Playwright's default size. */
export const WINDOW = { width: 1280, height: 720 } as const;

export interface ChosenBrowser {
  readonly path: string;
  readonly from: 'HOPPER_CHROMIUM' | 'installed' | '@sparticuz/chromium';
  /** What the browser's process needs in its environment besides ours. */
  readonly env: Readonly<Record<string, string>>;
}

export async function chooseChromium(
  env: NodeJS.ProcessEnv = process.env,
  installed: readonly string[] = INSTALLED_BROWSERS,
): Promise<ChosenBrowser> {
  const chosen = env.HOPPER_CHROMIUM ?? '';
  if (chosen !== '') {
    if (!(await isExecutable(chosen))) {
      throw new Error(
        `HOPPER_CHROMIUM=${chosen} is not an executable file: point it at a Chrome or Chromium binary, or unset it to use an installed one or the npm package's`,
      );
    }
    return { path: chosen, from: 'HOPPER_CHROMIUM', env: {} };
  }
  for (const path of installed) {
    if (await isExecutable(path)) return { path, from: 'installed', env: {} };
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `no Chrome or Chromium at ${installed.join(', ')}, and the npm package's Chromium is for x86-64 Linux only: install one, or set HOPPER_CHROMIUM to its path`,
    );
  }
  return packagedChromium();
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isFile() ?? false;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * The package's Chromium, unpacked beside a temporary name and renamed into place: a run that
 * stops halfway, or another test process unpacking at the same time, never leaves a half-written
 * browser behind. Its Open Sans comes along for machines without fonts (text would be blank),
 * after the system's own; and so do the shared libraries it needs that a machine without a
 * browser may lack (NSS, NSPR, expat: the package's al2023.tar.br), through LD_LIBRARY_PATH.
 */
async function packagedChromium(): Promise<ChosenBrowser> {
  const packageDir = join(dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '../..');
  const { version } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const folder = join(packageDir, '../../.cache/hopper-chromium', version);
  const chosen = {
    path: join(folder, 'chromium'),
    from: '@sparticuz/chromium',
    env: { FONTCONFIG_FILE: join(folder, 'fonts.conf'), LD_LIBRARY_PATH: join(folder, 'lib') },
  } as const;
  // An unpacking from before the libraries came along is replaced.
  const whole = async () =>
    (await isExecutable(chosen.path)) && (await isFile(join(folder, 'lib/libnss3.so')));
  if (await whole()) return chosen;
  await mkdir(dirname(folder), { recursive: true });
  const partial = await mkdtemp(`${folder}.partial-`);
  await pipeline(
    createReadStream(join(packageDir, 'bin/chromium.br')),
    createBrotliDecompress(),
    createWriteStream(join(partial, 'chromium'), { mode: 0o755 }),
  );
  await mkdir(join(partial, 'fonts'));
  const fonts = brotliDecompressSync(await readFile(join(packageDir, 'bin/fonts.tar.br')));
  for (const [name, bytes] of tarFiles(fonts)) {
    if (name.endsWith('.ttf')) await writeFile(join(partial, 'fonts', basename(name)), bytes);
  }
  await mkdir(join(partial, 'lib'));
  const libraries = brotliDecompressSync(await readFile(join(packageDir, 'bin/al2023.tar.br')));
  for (const [name, bytes] of tarFiles(libraries)) {
    if (name.startsWith('lib/')) await writeFile(join(partial, 'lib', basename(name)), bytes);
  }
  await writeFile(
    join(partial, 'fonts.conf'),
    `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
      `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n` +
      `  <dir>${join(folder, 'fonts')}</dir>\n  <cachedir>${join(tmpdir(), 'hopper-chromium-fontconfig')}</cachedir>\n` +
      `</fontconfig>\n`,
  );
  // Only a stale unpacking is removed: another process's whole copy may be running.
  if (!(await whole())) await rm(folder, { recursive: true, force: true });
  try {
    await rename(partial, folder);
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    // Another process renamed its copy into place first: that one is whole too.
    if (!(await whole())) throw error;
  }
  return chosen;
}

/** The regular files of a ustar archive, by name. */
function* tarFiles(tar: Buffer): Generator<[name: string, bytes: Buffer]> {
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0;) {
    const name = tar.toString('utf8', at, at + 100).replace(/\0.*$/s, '');
    const size = parseInt(tar.toString('utf8', at + 124, at + 136), 8);
    const type = tar[at + 156];
    if (type === 0x30 || type === 0) yield [name, tar.subarray(at + 512, at + 512 + size)];
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/** Flags that keep the browser quiet: no sandbox (tests run as root in CI), GPU or traffic of its own. */
const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const browser = await chooseChromium();
  const profile = await mkdtemp(join(tmpdir(), 'hopper-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: browser.path,
    env: { ...process.env, ...browser.env },
    headless: true,
    timeout: BROWSER_WAIT_MS,
    viewport: WINDOW,
    acceptDownloads: true,
    args: ['--headless', ...CHROMIUM_ARGS],
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
