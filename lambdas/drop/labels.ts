/**
 * The labels file as an index of held-out examples' answers, and the match rules of
 * docs/drop-format.md (labels.csv):
 *
 * - `id` matches the example's `id` exactly (case and spaces kept);
 * - `text` matches the example's `text` after both are whitespace-normalised (trimmed, runs of
 *   white space made one space, case kept), where each masking placeholder in the example's text
 *   (`[EMAIL]`, `[PHONE]`, any `[UPPER_CASE]` token) stands for any non-empty run of characters,
 *   spaces included: the service masks what the user's copy still has;
 * - several matching rows must give the same label, else label_ambiguous naming them.
 *
 * Which rows are asked: the rows whose `id` is the example's id when there are any (an id is
 * the user's precise answer; a row for another id whose text happens to be the same does not
 * overrule it), else the rows whose `text` matches. So a file with both columns works for data
 * with ids and for data without (whose examples are named `<file>#<row>`).
 *
 * Cost, for a file of R rows and B bytes holding D distinct texts:
 * - building: one pass over the stream, O(B) time; memory O(B) for the ids and normalised texts;
 * - an example matched by id, or with a text without placeholders: O(|text|) to normalise plus
 *   one Map lookup (expected O(1));
 * - an example whose text has placeholders: a matching text starts with the literal before the
 *   first placeholder and ends with the one after the last, so the distinct texts are kept
 *   sorted once (O(D log D), on the first such example) and binary search finds those with
 *   that prefix (O(L log D)); when more than a few share it, the texts sorted by their reversal
 *   (built once, when first needed) give those with the suffix too, and the example's pattern is
 *   tried on the smaller of the two sets only. Matching N examples is
 *   near-linear, not O(N x D); only a text that both starts and ends with a placeholder (no
 *   prefix or suffix to look up) is tried against every distinct text. Trying the pattern on a
 *   text is linear in it: prefix, suffix and each literal between placeholders found leftmost
 *   with indexOf (no regex, so nothing to compile per example and no backtracking).
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { RunError } from '../core/errors/errors.js';
import {
  emptyLabelsMessage,
  labelAmbiguousMessage,
  labelMissingMessage,
  labelsWithoutRowsMessage,
} from '../core/errors/messages.js';
import type { DropFile } from '../core/state/state.js';
import {
  csvRecords,
  isBlank,
  labelColumns,
  openInboxFile,
  REQUIRED,
  type CsvRecord,
  type LabelColumns,
} from './labels-csv.js';
import { quoted } from './user-text.js';

/** A held-out example as the service shows it (docs/service-contract.md, B6). */
export interface HeldOutExample {
  readonly id: string;
  readonly text: string;
}

/** One usable row of the labels file. */
export interface LabelRow {
  /** The row number in the file (header = 1). */
  readonly row: number;
  /** Trimmed; may be empty (a row without a label is refused when it matches). */
  readonly label: string;
  /** Exactly as written; undefined when the file has no id column or the cell is empty. */
  readonly id: string | undefined;
  /** Whitespace-normalised; undefined when the file has no text column or the cell is blank. */
  readonly text: string | undefined;
}

/** The label for an example and the rows that gave it (all agreeing). */
export interface LabelMatch {
  readonly label: string;
  readonly rows: readonly LabelRow[];
}

/** The service's masking placeholders: `[EMAIL]`, `[PHONE]`, any `[UPPER_CASE]` token. */
const PLACEHOLDER = /\[[A-Z][A-Z0-9_]*\]/;
const ROWS_NAMED = 10;
/** Texts sharing an example's prefix that are tried without looking at its suffix too. */
const FEW_CANDIDATES = 8;
const TEXT_SHOWN = 200;

/** Trimmed, every run of white space made one space; case kept. */
export function normaliseWhitespace(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/** What a text with placeholders matches: `test` says whether a normalised text does. */
export interface PlaceholderPattern {
  test(normalisedText: string): boolean;
}

/**
 * The pattern of a normalised text with placeholders, or null when it has none. A matching text
 * starts with the literal before the first placeholder, ends with the one after the last, and
 * holds the literals between in order, each placeholder covering one or more characters. Each
 * middle literal is placed leftmost (indexOf), which is always right when every placeholder
 * stands for "one or more of anything": a later placement only leaves less room for the rest.
 * Linear in the text, and no regex to compile per example (that compile was most of the cost of
 * matching by text).
 */
export function placeholderPattern(normalisedText: string): PlaceholderPattern | null {
  const literals = normalisedText.split(PLACEHOLDER);
  if (literals.length === 1) return null;
  const first = literals[0] ?? '';
  const last = literals[literals.length - 1] ?? '';
  const middle = literals.slice(1, -1);
  return {
    test(text) {
      if (!text.startsWith(first) || !text.endsWith(last)) return false;
      let at = first.length;
      for (const literal of middle) {
        // The placeholder before this literal covers at least one character.
        const found = text.indexOf(literal, at + 1);
        if (found < 0) return false;
        at = found + literal.length;
      }
      // The last placeholder covers at least one character before the final literal.
      return text.length - last.length >= at + 1;
    },
  };
}

export class LabelIndex {
  readonly #byId = new Map<string, LabelRow[]>();
  /** Rows by normalised text: the exact lookup, and the distinct texts a placeholder scan tries. */
  readonly #byText = new Map<string, LabelRow[]>();
  /** The distinct texts sorted: built on the first placeholder text. */
  #sorted: readonly string[] | undefined;
  /** The distinct texts reversed and sorted: built when a prefix alone leaves many candidates. */
  #reversed: readonly string[] | undefined;
  #rows = 0;
  #patternTests = 0;

  constructor(
    /** The file's name, for messages. */
    readonly fileName: string,
    readonly columns: LabelColumns,
  ) {}

  /** Rows that can match something (an id or a text). */
  get size(): number {
    return this.#rows;
  }

  /** Distinct texts a placeholder pattern was tried on so far: the cost of matching by text. */
  get patternTests(): number {
    return this.#patternTests;
  }

  /** Adds a record of the file (after the header); rows with neither id nor text are skipped. */
  addRecord(record: CsvRecord): void {
    const row = rowOf(record, this.columns);
    if (row === undefined) return;
    if (row.id !== undefined) append(this.#byId, row.id, row);
    if (row.text !== undefined) append(this.#byText, row.text, row);
    this.#sorted = undefined;
    this.#reversed = undefined;
    this.#rows++;
  }

  /** Every row matching the example, in file order (see the module comment for which). */
  rowsFor(example: HeldOutExample): readonly LabelRow[] {
    const byId = this.#byId.get(example.id);
    if (byId !== undefined) return byId;
    const text = normaliseWhitespace(example.text);
    const pattern = placeholderPattern(text);
    if (pattern === null) return this.#byText.get(text) ?? [];
    const rows: LabelRow[] = [];
    for (const candidate of this.#candidates(text)) {
      this.#patternTests++;
      if (pattern.test(candidate)) rows.push(...(this.#byText.get(candidate) ?? []));
    }
    return rows.sort((a, b) => a.row - b.row);
  }

  /**
   * The distinct texts that start with the literal before the text's first placeholder and end
   * with the one after its last: whichever of the two sets is smaller (the pattern checks both).
   */
  #candidates(text: string): readonly string[] {
    const literals = text.split(PLACEHOLDER);
    this.#sorted ??= [...this.#byText.keys()].sort();
    const starting = prefixRange(this.#sorted, literals[0] ?? '');
    // A few texts with the prefix: no need for the suffix look-up (nor to build its order).
    if (starting.end - starting.start <= FEW_CANDIDATES)
      return this.#sorted.slice(starting.start, starting.end);
    this.#reversed ??= [...this.#byText.keys()].map(reverse).sort();
    const ending = prefixRange(this.#reversed, reverse(literals[literals.length - 1] ?? ''));
    if (starting.end - starting.start <= ending.end - ending.start) {
      return this.#sorted.slice(starting.start, starting.end);
    }
    return this.#reversed.slice(ending.start, ending.end).map(reverse);
  }

  /**
   * The example's label.
   * @throws RunError label_missing (no row matches) or label_ambiguous (matching rows disagree)
   */
  match(example: HeldOutExample): LabelMatch {
    const rows = this.rowsFor(example);
    const first = rows[0];
    if (first === undefined) throw this.#missing(example);
    disagreement(this.fileName, `match held-out example ${describeExample(example)}`, rows);
    return { label: first.label, rows };
  }

  #missing(example: HeldOutExample): RunError {
    const ways = [
      ...(this.columns.id === undefined ? [] : [`whose id is ${quoted(example.id)}`]),
      ...(this.columns.text === undefined
        ? []
        : [
            "whose text is the example's text (your original; [EMAIL], [PHONE] and other [UPPER_CASE] placeholders stand for what the service masked)",
          ]),
    ];
    return new RunError('label_missing', labelMissingMessage(this.fileName, describeExample(example), ways));
  }
}

/**
 * Streams the labels file (at the version validate_drop pinned) into an index.
 * @throws RunError invalid_labels_file (bad header or CSV), drop_changed (the file changed)
 */
export async function loadLabelIndex(
  s3: S3Client,
  bucket: string,
  drop: string,
  labels: DropFile,
): Promise<LabelIndex> {
  const body = await openInboxFile(s3, bucket, drop, labels);
  return indexOfRecords(csvRecords(body, labels.name), labels.name);
}

/** The index of a labels file's records (header first). */
export async function indexOfRecords(
  records: AsyncIterable<CsvRecord>,
  fileName: string,
): Promise<LabelIndex> {
  let index: LabelIndex | undefined;
  for await (const record of records) {
    if (isBlank(record)) continue;
    if (index === undefined) index = new LabelIndex(fileName, labelColumns(record.cells, fileName));
    else index.addRecord(record);
  }
  return index ?? new LabelIndex(fileName, labelColumns([], fileName));
}

/** The record as a label row; undefined when it has neither id nor text. */
function rowOf(record: CsvRecord, columns: LabelColumns): LabelRow | undefined {
  const cell = (column: number | undefined) => (column === undefined ? '' : (record.cells[column] ?? ''));
  const id = cell(columns.id);
  const text = normaliseWhitespace(cell(columns.text));
  if (id === '' && text === '') return undefined;
  const label = cell(columns.label).trim();
  return { row: record.row, label, id: id === '' ? undefined : id, text: text === '' ? undefined : text };
}

/** @throws RunError label_ambiguous when the `rows` that `match` something give different labels */
function disagreement(fileName: string, match: string, rows: readonly LabelRow[]): void {
  const byLabel = new Map<string, LabelRow[]>();
  for (const row of rows) append(byLabel, row.label, row);
  if (byLabel.size < 2) return;
  const groups = [...byLabel].map(
    ([label, agreeing]) => `${rowList(agreeing)} ${agreeing.length === 1 ? 'says' : 'say'} ${quoted(label)}`,
  );
  throw new RunError('label_ambiguous', labelAmbiguousMessage(fileName, match, groups));
}

/**
 * Reads the whole labels file before the dataset is created (open: the pinned version), so what
 * fails whatever examples the service holds out fails at once: not UTF-8 or not CSV, a bad
 * header (invalid_labels_file), no row (label_missing), an id given two labels (label_ambiguous).
 * Keeps each id's first row only. Without `open` (only names and sizes known) just the size is.
 */
export async function checkLabelsFile(
  labels: DropFile,
  open?: (file: DropFile) => Promise<Readable>,
): Promise<void> {
  if (labels.bytes === 0) {
    throw new RunError('invalid_labels_file', emptyLabelsMessage(labels.name, REQUIRED));
  }
  if (open === undefined) return;
  let rows = 0;
  const byId = new Map<string, LabelRow>();
  let columns: LabelColumns | undefined;
  for await (const record of csvRecords(await open(labels), labels.name)) {
    if (isBlank(record)) continue;
    if (columns === undefined) {
      columns = labelColumns(record.cells, labels.name);
      continue;
    }
    const row = rowOf(record, columns);
    if (row === undefined) continue;
    rows++;
    if (row.id === undefined) continue;
    const first = byId.get(row.id);
    if (first === undefined) byId.set(row.id, row);
    else disagreement(labels.name, `have id ${quoted(row.id)}`, [first, row]);
  }
  // Only blank lines: nothing to read a header from.
  if (columns === undefined) labelColumns([], labels.name);
  if (rows === 0) throw new RunError('label_missing', labelsWithoutRowsMessage(labels.name));
}

/** `row 3`, `rows 3, 9 and 12`, `rows 3, 9, ... and 40 more`. */
export function rowList(rows: readonly LabelRow[]): string {
  const numbers = rows.slice(0, ROWS_NAMED).map((row) => String(row.row));
  const more = rows.length - numbers.length;
  if (rows.length === 1) return `row ${numbers.join('')}`;
  if (more > 0) return `rows ${numbers.join(', ')} and ${String(more)} more`;
  return `rows ${numbers.slice(0, -1).join(', ')} and ${numbers[numbers.length - 1] ?? ''}`;
}

/** `"r-12" (text: "Call me at [PHONE]")`, the text cut short. */
export function describeExample(example: HeldOutExample): string {
  const text =
    example.text.length > TEXT_SHOWN ? `${example.text.slice(0, TEXT_SHOWN - 3)}...` : example.text;
  return `${quoted(example.id)} (text: ${quoted(text)})`;
}

/** [start, end) of the sorted strings that start with `prefix` (they sit together): two binary searches. */
function prefixRange(sorted: readonly string[], prefix: string): { start: number; end: number } {
  const start = firstIndex(sorted, (text) => text >= prefix);
  const end = firstIndex(sorted, (text) => text >= prefix && !text.startsWith(prefix), start);
  return { start, end };
}

/** The first index from `from` where `past` holds, for a predicate false then true along the array. */
function firstIndex(sorted: readonly string[], past: (text: string) => boolean, from = 0): number {
  let low = from;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (past(sorted[middle] ?? '')) high = middle;
    else low = middle + 1;
  }
  return low;
}

/** By code point, so a reversed text's surrogate pairs stay whole. */
function reverse(text: string): string {
  return Array.from(text).reverse().join('');
}

function append<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
