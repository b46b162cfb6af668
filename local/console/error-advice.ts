/**
 * What a run error means and what to do about it, as docs/errors.md says: the one place these
 * words live (test/docs.test.ts keeps its table in step with RUN_ERROR_CODES). The console reads
 * the table once and shows the row of a failed run's code.
 */
import { readFile } from 'node:fs/promises';
import { ERRORS_DOC } from '../files.js';

export interface ErrorAdvice {
  /** "what happened" */
  readonly meaning: string;
  /** "what to do" */
  readonly todo: string;
}

/** The rows of docs/errors.md's table, by code (Markdown code spans left as backticks). */
export async function loadErrorAdvice(): Promise<ReadonlyMap<string, ErrorAdvice>> {
  return parseErrorTable(await readFile(ERRORS_DOC, 'utf8'));
}

export function parseErrorTable(markdown: string): ReadonlyMap<string, ErrorAdvice> {
  const advice = new Map<string, ErrorAdvice>();
  for (const match of markdown.matchAll(/^\|\s*`([a-z_]+)`\s*\|(.*)\|(.*)\|\s*$/gm)) {
    const [, code = '', meaning = '', todo = ''] = match;
    advice.set(code, { meaning: meaning.trim(), todo: todo.trim() });
  }
  return advice;
}
