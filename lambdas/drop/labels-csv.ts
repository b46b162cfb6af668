/**
 * Reading a labels file (docs/drop-format.md, labels.csv): a CSV with a header row, a `label` column and an
 * `id` or a `text` column. Rows stream in one at a time from the pinned object, so the only
 * memory a file costs is what the caller keeps of each row.
 *
 * Row numbers are the spreadsheet's: every record counts one row (a quoted cell spanning lines
 * included) and so does every blank line, so the header is row 1 and an error's row number is
 * the one a user sees when opening the file. A file that is not CSV is refused naming the line
 * in a text editor, and a file that is not UTF-8 naming the byte (user-text.ts).
 */
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { CsvError, Parser } from 'csv-parse';
import { RunError } from '../core/errors/errors.js';
import { notCsvMessage, repeatedColumnMessage, missingColumnsMessage } from '../core/errors/messages.js';
import type { DropFile } from '../core/state/state.js';
import { inboxKey } from '../storage/keys.js';
import { ObjectChangedError, ObjectMissingError, openPinnedObject } from '../storage/streams.js';
import type { PinnedObject } from '../storage/streams.js';
import { checkedUtf8, listForMessage, printable } from './user-text.js';

/** Column positions of the header row; at least one of id and text is present. */
export interface LabelColumns {
  readonly label: number;
  readonly id: number | undefined;
  readonly text: number | undefined;
}

/** A record of the file (the header too) with its row number. */
export interface CsvRecord {
  readonly row: number;
  readonly cells: readonly string[];
}

/** A record longer than this is not a label row: it fails the parse instead of filling memory. */
export const MAX_RECORD_BYTES = 1024 * 1024;

export const REQUIRED = 'a "label" column and an "id" or a "text" column';

/**
 * csv-parse's stream, noting the line each record starts on for messages: csv-parse names the
 * line it stopped at, which for a quote left open is far below where the quote opened. (Its
 * on_record option would tell too, but builds an info object per record: 3 times the time.)
 */
class LabelsParser extends Parser {
  /** The line the record being read starts on: the one after the last record's end. */
  rowStart = 1;

  constructor() {
    super({
      bom: true,
      // Any line end, however they mix: left to itself, csv-parse takes the first line's end for
      // the whole file, and reads CRLF-then-LF as one record until it passes MAX_RECORD_BYTES.
      record_delimiter: ['\r\n', '\n', '\r'],
      // Blank lines come through as records of one empty cell: counting records is counting rows.
      skip_empty_lines: false,
      // A short row is read with empty cells rather than refused; the match decides what it means.
      relax_column_count: true,
      max_record_size: MAX_RECORD_BYTES,
    });
  }

  override push(record: unknown): boolean {
    // Called as the record is parsed, while info.lines is the line it ends on.
    if (record !== null) this.rowStart = this.info.lines + 1;
    return super.push(record);
  }
}

/** A record of nothing but white space (a blank line): not a header, not a label row. */
export function isBlank(record: CsvRecord): boolean {
  return record.cells.every((cell) => cell.trim() === '');
}

/**
 * Every record of a labels file, blank ones included, as they stream in.
 * @throws RunError invalid_labels_file when the file is not UTF-8 or not CSV (naming the byte or
 * the line and what is wrong there)
 */
export async function* csvRecords(body: Readable, fileName: string): AsyncGenerator<CsvRecord> {
  const text = Readable.from(checkedUtf8(body, fileName, 'invalid_labels_file'));
  const records = text.pipe(new LabelsParser());
  text.on('error', (error) => records.destroy(error));
  let row = 0;
  try {
    for await (const cells of records as AsyncIterable<string[]>) {
      row++;
      yield { row, cells };
    }
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const problem = csvProblem(error, records.rowStart);
    throw new RunError('invalid_labels_file', notCsvMessage(fileName, problem), { cause: error });
  } finally {
    // Leaving early releases the connection.
    records.destroy();
    text.destroy();
    body.destroy();
  }
}

/** What is wrong at which line, for a person (csv-parse's own words where they say it). */
function csvProblem(error: CsvError, rowStart: number): string {
  // Rows end at any line end, so a row running on past its line, or past the end, is in a quote.
  const quoteOpen =
    error.code === 'CSV_QUOTE_NOT_CLOSED' ||
    (error.code === 'CSV_MAX_RECORD_SIZE' && error.lines !== rowStart);
  return quoteOpen
    ? `a quote opened in the row starting on line ${String(rowStart)} is never closed. Close it (a quote inside a quoted cell is written twice: "")`
    : `${printable(error.message)}. Fix the file`;
}

/**
 * Where the label, id and text columns are. Names are compared after trimming, case kept.
 * @throws RunError invalid_labels_file naming what the header has and what it needs
 */
export function labelColumns(header: readonly string[], fileName: string): LabelColumns {
  const names = header.map((name) => name.trim());
  const has =
    names.length === 0 || (names.length === 1 && names[0] === '') ? 'no columns' : listForMessage(names);
  const position = (column: string): number | undefined => {
    const positions = names.flatMap((name, index) => (name === column ? [index] : []));
    if (positions.length > 1) {
      throw new RunError(
        'invalid_labels_file',
        repeatedColumnMessage(fileName, column, positions.length, has),
      );
    }
    return positions[0];
  };
  const label = position('label');
  const id = position('id');
  const text = position('text');
  if (label === undefined || (id === undefined && text === undefined)) {
    const missing = [
      ...(label === undefined ? ['"label"'] : []),
      ...(id === undefined && text === undefined ? ['"id" or "text"'] : []),
    ].join(' and ');
    throw new RunError('invalid_labels_file', missingColumnsMessage(fileName, has, REQUIRED, missing));
  }
  return { label, id, text };
}

/**
 * A file of the drop at the version validate_drop pinned (train.json: the one that started the
 * run).
 * @param gone the words of drop_changed when it is not that version any more (`changed`: another
 *   version is there; else it is gone)
 */
export async function openDropFile(
  s3: S3Client,
  file: PinnedObject,
  gone: (changed: boolean) => string,
): Promise<Readable> {
  return openPinnedObject(s3, file).catch((error: unknown) => {
    if (!(error instanceof ObjectChangedError || error instanceof ObjectMissingError)) throw error;
    throw new RunError('drop_changed', gone(error instanceof ObjectChangedError), { cause: error });
  });
}

/** A data or labels file at the version validate_drop pinned. */
export function openInboxFile(s3: S3Client, bucket: string, drop: string, file: DropFile): Promise<Readable> {
  const key = inboxKey(drop, file.name);
  return openDropFile(
    s3,
    { bucket, key, etag: file.etag },
    () =>
      `${file.name} changed or was removed while this run was using it; upload the folder again, train.json last`,
  );
}
