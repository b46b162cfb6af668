/**
 * package.json `engines` is what the dependencies declare: each Node.js release the range takes in
 * (where each alternative starts, and each major's first) satisfies the engines of every package in the lockfile (dependencies and the tools of
 * `npm test` alike), but for the one exception the README names: aws-local-stepfunctions declares
 * Node 22 and runs on 20 with local mode's Promise.withResolvers polyfill.
 *
 * Each package installs what it runs and nothing more: hopper-cli's dependencies are the packages
 * its compiled command and the handler bundles import, hopper-cdk imports only its peers.
 * test/packages.test.ts installs both tarballs as a user does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { cruise, type ICruiseOptions } from 'dependency-cruiser';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean; os?: string[] }>;
};

type Version = readonly [number, number, number];

/** `20`, `20.19`, `20.19.0`, `0.8.x`: missing or `x` parts are 0 (a lower bound's reading). */
function versionOf(text: string): Version {
  const [major = 0, minor = 0, patch = 0] = text
    .replace(/^v/, '')
    .split('.')
    .map((part) => (/^\d+$/.test(part) ? Number(part) : 0));
  return [major, minor, patch];
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Whether `version` satisfies an npm range of the forms packages' engines use: `*`, `>=x`, `>x`,
 * `<x`, `<=x`, `^x`, `~x`, a bare `x` (that major), space-separated (and) and `||` (or).
 */
function satisfies(version: Version, range: string): boolean {
  return range.split('||').some((alternative) => {
    const comparators = alternative
      .trim()
      .replace(/([<>=^~]+)\s+/g, '$1')
      .split(/\s+/);
    return comparators.every((comparator) => {
      const [, operator = '', rest = ''] = /^([<>=^~]*)(.*)$/.exec(comparator) ?? [];
      if (rest === '' || rest === '*' || rest === 'x') return true;
      const bound = versionOf(rest);
      const order = compare(version, bound);
      switch (operator) {
        case '>=':
          return order >= 0;
        case '>':
          return order > 0;
        case '<':
          return order < 0;
        case '<=':
          return order <= 0;
        case '^':
          return order >= 0 && version[0] === bound[0];
        case '~':
          return order >= 0 && version[0] === bound[0] && version[1] === bound[1];
        default:
          // A bare `20` means any 20.x; `20.19.0` exactly that one.
          return rest.split('.').length === 1 ? version[0] === bound[0] : order === 0;
      }
    });
  });
}

/**
 * The releases that stand for a range: where each alternative starts, and the first release of
 * each major from 20 to 26 that the range takes in (a range open at the top takes them all).
 */
function releasesOf(range: string): Version[] {
  const floors = range
    .split('||')
    .map((alternative) => versionOf(alternative.trim().replace(/^[>=^~]+/, '')));
  const majors = Array.from({ length: 7 }, (_, index): Version => [20 + index, 0, 0]);
  const releases = [...floors, ...majors].filter((release) => satisfies(release, range));
  const unique = new Map(releases.map((release) => [release.join('.'), release]));
  return [...unique.values()].sort(compare);
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** The packages the import graph from `entry` reaches. */
async function packagesReachedFrom(entry: string): Promise<Set<string>> {
  const result = await build({
    entryPoints: [new URL(`../${entry}`, import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const packages = new Set<string>();
  for (const input of Object.values(result.metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.external !== true) continue;
      const name = packageOf(imported.path.replace(/^node:/, ''));
      if (!builtinModules.includes(name)) packages.add(name);
    }
  }
  return packages;
}

/** The packages a built bundle imports or resolves at run time (bare specifiers, Node's built-ins left out). */
function importedPackages(file: string): Set<string> {
  const code = readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
  const found = new Set<string>();
  for (const match of code.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\d*(?:\.resolve)?\()["']([^"'./][^"']*)["']/g,
  )) {
    const name = packageOf((match[1] ?? '').replace(/^node:/, ''));
    if (!builtinModules.includes(name)) found.add(name);
  }
  return found;
}

function manifest(folder: string): {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional: boolean }>;
} {
  return JSON.parse(
    readFileSync(new URL(`../packages/${folder}/package.json`, import.meta.url), 'utf8'),
  ) as never;
}

describe('what each package installs (npm run build, scripts/build.ts)', () => {
  it('hopper-cli depends on exactly what its compiled command and the handler bundles leave to the install, at the ranges the repository tests', () => {
    const handlers = readdirSync(new URL('../dist/handlers', import.meta.url)).map(
      (name) => `dist/handlers/${name}/index.mjs`,
    );
    const imported = new Set([
      ...importedPackages('dist/hopper.mjs'),
      ...handlers.flatMap((file) => [...importedPackages(file)]),
    ]);
    const { dependencies = {}, peerDependenciesMeta = {} } = manifest('cli');
    // An optional peer (the AGPL simulator of hopper permissions) is loaded only where the user installed it.
    const optional = Object.keys(peerDependenciesMeta);
    expect(optional).toEqual(['@cloud-copilot/iam-simulate']);
    expect([...imported].sort()).toEqual([...Object.keys(dependencies), ...optional].sort());
    for (const [name, range] of Object.entries(dependencies))
      expect(range, name).toBe(pkg.dependencies[name]);
    // Local mode reads the definition the build synthesized: the CLI needs no CDK.
    expect(imported).not.toContain('aws-cdk-lib');
  });

  it('hopper-cdk imports its peers alone, ESM and CommonJS, and depends on nothing', () => {
    for (const file of ['dist/index.js', 'dist/index.cjs']) {
      expect([...importedPackages(file)].sort(), file).toEqual(['aws-cdk-lib', 'constructs']);
    }
    const { dependencies, peerDependencies = {} } = manifest('cdk');
    expect(dependencies).toBeUndefined();
    expect(Object.keys(peerDependencies).sort()).toEqual(['aws-cdk-lib', 'constructs']);
  });

  it('nothing the command loads is a devDependency of the repository', async () => {
    const packages = await packagesReachedFrom('local/main.ts');
    const optional = Object.keys(manifest('cli').peerDependenciesMeta ?? {});
    expect([...packages].filter((name) => name in pkg.devDependencies && !optional.includes(name))).toEqual(
      [],
    );
  });
});

describe('local/', () => {
  it('holds only what the command line runs: no module there is for tests alone', async () => {
    const reached = await modulesReachedFrom('local/main.ts');
    const modules = readdirSync(new URL('../local', import.meta.url), { recursive: true, encoding: 'utf8' })
      .filter((path) => path.endsWith('.ts'))
      .map((path) => `local/${path}`);
    expect(modules.length).toBeGreaterThan(50);
    expect(modules.filter((path) => !reached.has(path))).toEqual([]);
  });
});

/**
 * The project's files the import graph from `entry` reaches, type-only imports included (a module
 * of types only leaves nothing in a bundle, so esbuild's graph would miss it): dependency-cruiser
 * with the options of `npm run deps`.
 */
async function modulesReachedFrom(entry: string): Promise<Set<string>> {
  const { options } = createRequire(import.meta.url)('../.dependency-cruiser.cjs') as {
    options: ICruiseOptions;
  };
  const { output } = await cruise([entry], options, { extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'] });
  if (typeof output === 'string') throw new Error('dependency-cruiser gave a report, not modules');
  return new Set(output.modules.map((module) => module.source));
}

describe('package.json engines', () => {
  /** Declared Node 22, runs on 20 with local/emulator/with-resolvers.ts (README, "Node.js"). */
  const POLYFILLED_ON_20 = new Set(['aws-local-stepfunctions']);

  it('the range reader knows the forms the lockfile uses', () => {
    expect(satisfies([20, 19, 0], '^20.19.0 || ^22.13.0 || >=24')).toBe(true);
    expect(satisfies([22, 12, 0], '^20.19.0 || ^22.13.0 || >=24')).toBe(false);
    expect(satisfies([20, 19, 0], '>=22.0.0')).toBe(false);
    expect(satisfies([20, 19, 0], '>=6 <7 || >=8')).toBe(true);
    expect(satisfies([20, 19, 0], '18 || 20 || >=22')).toBe(true);
    expect(satisfies([21, 0, 0], '20 || >=22')).toBe(false);
    expect(satisfies([20, 17, 0], '>=20.18.1')).toBe(false);
  });

  it('every release the range takes in satisfies every package in the lockfile, but the polyfilled one on 20', () => {
    const floors = releasesOf(pkg.engines.node);
    expect(floors.map((floor) => floor.join('.'))).toEqual([
      '20.19.0',
      '22.13.0',
      '24.0.0',
      '25.0.0',
      '26.0.0',
    ]);
    const unmet: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (path === '' || range === undefined) continue;
      const name = path.replace(/^.*node_modules\//, '');
      for (const floor of floors) {
        if (satisfies(floor, range)) continue;
        if (floor[0] === 20 && POLYFILLED_ON_20.has(name)) continue;
        unmet.push(`${name} (${range}) on Node ${floor.join('.')}`);
      }
    }
    expect(unmet).toEqual([]);
  });
});
