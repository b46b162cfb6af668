/**
 * The definition local mode runs: dist/definition.json, which `npm run build` synthesizes from
 * the construct (infra/local-definition.ts), and the handler bundles it names. Read once per
 * process; missing, an error that says how to build it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LocalDefinition } from '../../infra/local-definition.js';
import { LOCAL_DEFINITION } from '../files.js';

export type { AslDefinition, AslState, LocalDefinition } from '../../infra/local-definition.js';

let loaded: LocalDefinition | undefined;

export function loadLocalDefinition(): LocalDefinition {
  if (loaded !== undefined) return loaded;
  let text: string;
  try {
    text = readFileSync(LOCAL_DEFINITION, 'utf8');
  } catch (error) {
    throw new Error(
      `local mode's definition ${fileURLToPath(LOCAL_DEFINITION)} cannot be read: run npm run build in the repository`,
      { cause: error },
    );
  }
  loaded = JSON.parse(text) as LocalDefinition;
  return loaded;
}
