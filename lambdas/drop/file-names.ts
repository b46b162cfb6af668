/**
 * What a file of a drop may be called. The service takes plain names only (docs/service-contract.md, B2: no `/`,
 * no `..`), so a drop is one flat folder: these rules decide which train.json entries and which
 * objects of the folder can be sent. Control characters (a tab, a newline) are refused too: a
 * service that takes them is rare, and such a name is almost always a slip of a script.
 */
import { CONTROL_CHARACTER } from './user-text.js';

/** The service's ceiling on a file name's length. */
export const MAX_FILE_NAME_LENGTH = 255;

/** How a plain file name is described to users, in every message that refuses one. */
export const PLAIN_FILE_NAME_RULE = `1 to ${String(MAX_FILE_NAME_LENGTH)} characters, no "/", "\\", ".." or control characters such as a tab or a newline`;

/** Why the service would refuse `name` as a file name, or undefined when it is a plain one. */
export function fileNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'it is empty';
  if (name.length > MAX_FILE_NAME_LENGTH) {
    return `it has ${String(name.length)} characters, over ${String(MAX_FILE_NAME_LENGTH)}`;
  }
  if (name.includes('/') || name.includes('\\')) return 'it has a "/" or "\\"';
  if (name.includes('..') || name === '.') return 'it is "." or has ".."';
  if (CONTROL_CHARACTER.test(name)) return 'it has a control character (a tab, a newline, ...)';
  return undefined;
}

/**
 * A file operating systems leave in folders (Finder's `.DS_Store` and `._x`, Windows' `Thumbs.db`
 * and `desktop.ini`; any name starting with `.`): left out of a drop's default file list, never
 * data (docs/drop-format.md, the train.json table).
 */
export function isLeftBySystem(name: string): boolean {
  return name.startsWith('.') || ['thumbs.db', 'desktop.ini'].includes(name.toLowerCase());
}

export function isPlainFileName(name: string): boolean {
  return fileNameProblem(name) === undefined;
}
