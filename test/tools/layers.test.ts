/**
 * The layer rules of .dependency-cruiser.cjs (`npm run deps` applies them to the code): read
 * here as data, so a rule whose pattern matches nothing, or the wrong way round, fails before it
 * lets an upward import through unseen.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

interface Rule {
  readonly name: string;
  readonly from: { readonly path?: string; readonly pathNot?: string | readonly string[] };
  readonly to: { readonly path?: string };
}

const require = createRequire(import.meta.url);
const { forbidden } = require('../../.dependency-cruiser.cjs') as { forbidden: readonly Rule[] };
const layerRules = forbidden.filter((rule) => rule.name.startsWith('layer-'));
const LAMBDAS = fileURLToPath(new URL('../../lambdas', import.meta.url));

/** The layer rules an import from `from` to `to` breaks, by name. */
function broken(from: string, to: string): string[] {
  return layerRules
    .filter(
      (rule) => new RegExp(rule.from.path ?? '^$').test(from) && new RegExp(rule.to.path ?? '^$').test(to),
    )
    .map((rule) => rule.name);
}

describe('the layers of lambdas/', () => {
  it.each([
    ['lambdas/core/state/under-way.ts', 'lambdas/records/status/status.ts'],
    ['lambdas/drop/validate.ts', 'lambdas/ownership/resume.ts'],
    ['lambdas/records/events/index.ts', 'lambdas/runtime/publish-events.ts'],
    ['lambdas/ownership/supersede.ts', 'lambdas/runtime/handler.ts'],
    ['lambdas/runtime/handler.ts', 'lambdas/steps/report.ts'],
    ['lambdas/steps/report.ts', 'lambdas/handlers/report.handler.ts'],
    ['lambdas/storage/objects.ts', 'lambdas/core/errors/errors.ts'],
    ['lambdas/service-client/client.ts', 'lambdas/core/state/state.ts'],
  ])('forbid an import up: %s -> %s', (from, to) => {
    expect(broken(from, to)).toHaveLength(1);
  });

  it.each([
    ['lambdas/handlers/report.handler.ts', 'lambdas/steps/report.ts'],
    ['lambdas/steps/report.ts', 'lambdas/runtime/index.ts'],
    ['lambdas/steps/validate-drop.ts', 'lambdas/drop/validate.ts'],
    ['lambdas/trigger/start-execution.ts', 'lambdas/records/status/index.ts'],
    ['lambdas/ownership/resume.ts', 'lambdas/records/status/status.ts'],
    ['lambdas/core/state/slots.ts', 'lambdas/core/schedule/polling.ts'],
    ['lambdas/core/state/run-name.ts', 'lambdas/storage/keys.ts'],
  ])('allow an import down or within a layer: %s -> %s', (from, to) => {
    expect(broken(from, to)).toEqual([]);
  });

  it('places every folder of lambdas/ in a layer', () => {
    const rule = forbidden.find((each) => each.name === 'lambdas-in-a-layer');
    const outside = new RegExp(String(rule?.from.pathNot));
    const folders = readdirSync(LAMBDAS, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(folders.length).toBeGreaterThanOrEqual(10);
    for (const folder of folders) expect(`lambdas/${folder.name}/a.ts`).toMatch(outside);
    expect('lambdas/elsewhere/a.ts').not.toMatch(outside);
  });
});
