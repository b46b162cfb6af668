/**
 * What a file of a drop may be called. The service takes plain names only (no folders), so a
 * drop is one flat folder: these rules decide which train.json entries and which objects of the
 * folder can be sent.
 */

/** The service's ceiling on a file name's length. */
export const MAX_FILE_NAME_LENGTH = 255;

/** Non-empty, at most 255 characters, no `/` or `\`, not `.` or `..`. */
export function isPlainFileName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= MAX_FILE_NAME_LENGTH &&
    !name.includes('/') &&
    !name.includes('\\') &&
    name !== '.' &&
    name !== '..'
  );
}

/** `a, b, c and 7 more`: a list short enough for an error message. */
export function listForMessage(items: readonly string[], shown = 10): string {
  const quoted = items.slice(0, shown).map((item) => JSON.stringify(item));
  const more = items.length - quoted.length;
  return more > 0 ? `${quoted.join(', ')} and ${String(more)} more` : quoted.join(', ');
}
