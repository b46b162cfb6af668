/**
 * `hopper` runs from an install without devDependencies (`npm ci --omit=dev`): every package the
 * command line can load, statically or by a dynamic import, is a dependency. esbuild follows the
 * whole import graph from the CLI's entry with every package left external, so each package it
 * reaches shows up as an external import.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

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

describe('the command line without devDependencies', () => {
  it('loads only dependencies, never a devDependency (cdk-nag, esbuild, vitest, ...)', async () => {
    const packages = await packagesReachedFrom('local/cli.ts');
    // It does reach the stack (local mode synthesizes it) and the service client.
    expect(packages).toContain('aws-cdk-lib');
    expect(packages).toContain('undici');
    const dev = [...packages].filter((name) => name in pkg.devDependencies);
    expect(dev).toEqual([]);
    const undeclared = [...packages].filter((name) => !(name in pkg.dependencies));
    expect(undeclared).toEqual([]);
  });
});
