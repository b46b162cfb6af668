/**
 * Text from a user's files (train.json, the labels file): read as UTF-8 or refused at the first
 * byte that is not, and echoed in messages with every control character escaped, so what a user
 * wrote (a UTF-16 file read as UTF-8 is full of NULs) cannot garble the terminal or log showing it.
 */
import { TextDecoder } from 'node:util';
import { RunError } from '../core/errors/errors.js';
import type { RunErrorCode } from '../core/errors/codes.js';
import { notUtf8Message } from '../core/errors/messages.js';

// eslint-disable-next-line no-control-regex -- control characters are exactly what is matched
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, 'g');

/** `text` with every control character written `\u0000`: the one way messages echo user input. */
export function printable(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A value as JSON (a string in double quotes), printable. */
export function quoted(value: unknown): string {
  return printable(JSON.stringify(value));
}

/** `"a", "b", "c" and 7 more`: a list short enough for an error message (10 items), each `format`ted. */
export function listForMessage(items: readonly string[], format: (item: string) => string = quoted): string {
  const listed = items.slice(0, 10).map(format);
  const more = items.length - listed.length;
  return more > 0 ? `${listed.join(', ')} and ${String(more)} more` : listed.join(', ');
}

/** A BOM stays in the text (ignoreBOM), so decoded text is byte for byte what was read. */
const strictUtf8 = (): TextDecoder => new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * `bytes` as text.
 * @throws RunError `code` naming the offset of the first byte that is not UTF-8
 */
export function decodeUtf8(bytes: Uint8Array, fileName: string, code: RunErrorCode): string {
  try {
    return strictUtf8().decode(bytes);
  } catch {
    throw notUtf8(bytes, 0, fileName, code);
  }
}

/**
 * The stream's chunks, passed on as they are once checked as UTF-8 (a character may be split
 * between chunks).
 * @throws RunError `code` naming the offset of the first byte that is not UTF-8
 */
export async function* checkedUtf8(
  body: AsyncIterable<Buffer>,
  fileName: string,
  code: RunErrorCode,
): AsyncGenerator<Buffer> {
  const decoder = strictUtf8();
  // Bytes decoded into whole characters so far, and those of a character still incomplete.
  let decoded = 0;
  let pending: Uint8Array = Buffer.alloc(0);
  for await (const chunk of body) {
    const fed = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let whole: number;
    try {
      whole = Buffer.byteLength(decoder.decode(chunk, { stream: true }));
    } catch {
      throw notUtf8(fed, decoded, fileName, code);
    }
    decoded += whole;
    pending = fed.subarray(whole);
    yield chunk;
  }
  if (pending.length > 0) throw notUtf8(pending, decoded, fileName, code);
}

/**
 * `bytes`, at `start` in the file, hold a sequence that is not UTF-8: it starts after the text
 * before the first U+FFFD the lenient decoder put in, skipping any the bytes spell (EF BF BD).
 */
function notUtf8(bytes: Uint8Array, start: number, fileName: string, code: RunErrorCode): RunError {
  const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
  let offset = 0;
  let from = 0;
  for (let at = text.indexOf('\uFFFD'); at >= 0; at = text.indexOf('\uFFFD', at + 1)) {
    offset += Buffer.byteLength(text.slice(from, at));
    if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) break;
    offset += 3;
    from = at + 1;
  }
  const hex = (bytes[offset] ?? 0).toString(16).padStart(2, '0');
  return new RunError(code, notUtf8Message(fileName, start + offset, hex));
}
