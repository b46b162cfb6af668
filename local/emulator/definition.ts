/**
 * The definition local mode runs: dist/definition.json, which `npm run build` synthesizes from
 * the construct (scripts/local-definition.ts), and the handler bundles it names. Read once per
 * process; missing, an error that says how to build it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TaskName } from '../../infra/tasks.js';
import { LOCAL_DEFINITION } from '../files.js';

export interface AslState {
  readonly Type: string;
  readonly Resource?: string;
  readonly [field: string]: unknown;
}

export interface AslDefinition {
  readonly StartAt: string;
  readonly States: Readonly<Record<string, AslState>>;
  readonly [field: string]: unknown;
}

export interface LocalDefinition {
  /** The definition, Lambda ARNs replaced by placeholders. */
  readonly definition: AslDefinition;
  /** The handler bundle of every Task state (dist/handlers/<bundle>/index.mjs), by state name. */
  readonly handlers: Readonly<Record<TaskName, string>>;
}

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
