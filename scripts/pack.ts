/**
 * `npm run pack`: builds (scripts/build.ts, with the construct's types) and the API reference, stages
 * each package in dist/stage/<name>/ from its manifest in packages/<name>/ and the files that
 * manifest lists, and writes each tarball to dist/packages/ (docs/packages.md). The version of
 * every package is the repository's (package.json), and CHANGELOG.md has a section for it.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAGE = `${ROOT}dist/stage`;
export const PACKAGES_DIR = `${ROOT}dist/packages`;

interface Manifest {
  name: string;
  version: string;
  files: string[];
}

/** The folder of each package's manifest and README (packages/<folder>/). */
export const PACKAGE_FOLDERS = ['cdk', 'cli'] as const;

async function run(command: string, args: readonly string[]): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)(command, args, {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  process.stderr.write(stderr);
  return stdout;
}

/** The version every package takes, after checking CHANGELOG.md has its section. */
function version(): string {
  const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
  if (!readFileSync(`${ROOT}CHANGELOG.md`, 'utf8').includes(`## ${version} `)) {
    throw new Error(`CHANGELOG.md has no section "## ${version} (<date>)": add one before packing`);
  }
  return version;
}

/** dist/stage/<name>/: the manifest (with the version), its README, and each of its files. */
function stage(folder: string, packageVersion: string): string {
  const manifest = JSON.parse(readFileSync(`${ROOT}packages/${folder}/package.json`, 'utf8')) as Manifest;
  const target = `${STAGE}/${manifest.name}`;
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  writeFileSync(
    `${target}/package.json`,
    `${JSON.stringify({ ...manifest, version: packageVersion }, null, 2)}\n`,
  );
  cpSync(`${ROOT}packages/${folder}/README.md`, `${target}/README.md`);
  for (const file of manifest.files) cpSync(`${ROOT}${file}`, `${target}/${file}`, { recursive: true });
  return target;
}

/**
 * Each package's tarball in dist/packages/, by name.
 * `build: false` packs the code `npm run build` wrote (the tests' globalSetup), adding only the
 * declarations: rebuilding would replace the bundles under tests that run them at the same time.
 */
export async function pack({ build = true }: { readonly build?: boolean } = {}): Promise<
  Record<string, string>
> {
  const packageVersion = version();
  // The build and the API reference from the doc comments (typedoc.json) at once: neither reads
  // what the other writes. The package ships the committed API.md, which test/packages.test.ts
  // keeps equal to dist/api (`npm run api` rewrites it).
  await Promise.all([
    run(process.execPath, ['--import', 'tsx', 'scripts/build.ts', build ? '--types' : '--types-only']),
    run(process.execPath, ['node_modules/typedoc/bin/typedoc', '--out', 'dist/api']),
  ]);
  // The CommonJS entry's declarations: the same types, for `require` under node16 resolution.
  cpSync(`${ROOT}dist/index.d.ts`, `${ROOT}dist/index.d.cts`);
  rmSync(PACKAGES_DIR, { recursive: true, force: true });
  mkdirSync(PACKAGES_DIR, { recursive: true });
  const tarballs: Record<string, string> = {};
  for (const folder of PACKAGE_FOLDERS) {
    const staged = stage(folder, packageVersion);
    const [packed] = JSON.parse(
      await run('npm', ['pack', staged, '--json', '--pack-destination', PACKAGES_DIR]),
    ) as {
      name: string;
      filename: string;
    }[];
    if (packed === undefined) throw new Error(`npm pack wrote nothing for ${staged}`);
    tarballs[packed.name] = `${PACKAGES_DIR}/${packed.filename}`;
  }
  return tarballs;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [name, file] of Object.entries(await pack())) process.stdout.write(`${name}: ${file}\n`);
}
