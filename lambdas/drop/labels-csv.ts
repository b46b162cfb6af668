/**
 * Reading a labels file (DESIGN.md section 1): a CSV with a header row, a `label` column and an
 * `id` or a `text` column. Rows stream in one at a time from the pinned object, so the only
 * memory a file costs is what the caller keeps of each row.
 *
 * Row numbers are the spreadsheet's: every record counts one row (a quoted cell spanning lines
 * included) and so does every blank line, so the header is row 1 and an error's row number is
 * the one a user sees when opening the file.
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { parse, type Options } from 'csv-parse';
import { RunError } from '../run/errors.js';
import type { DropFile } from '../run/state.js';
import { inboxKey } from '../storage/keys.js';
import { ObjectChangedError, ObjectMissingError, openPinnedObject } from '../storage/streams.js';
import { listForMessage } from './file-names.js';

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
/** The header row alone; checked by validate_drop without reading further. */
export const MAX_HEADER_BYTES = 64 * 1024;

const REQUIRED = 'a "label" column and an "id" or a "text" column';

function parser(maxRecordBytes: number) {
  const options: Options = {
    bom: true,
    // Blank lines come through as records of one empty cell: counting records is counting rows.
    skip_empty_lines: false,
    // A short row is read with empty cells rather than refused; the match decides what it means.
    relax_column_count: true,
    max_record_size: maxRecordBytes,
  };
  return parse(options);
}

/** A record of nothing but white space (a blank line): not a header, not a label row. */
export function isBlank(record: CsvRecord): boolean {
  return record.cells.every((cell) => cell.trim() === '');
}

/**
 * Every record of a labels file, blank ones included, as they stream in.
 * @throws RunError invalid_labels_file when the CSV cannot be parsed (the message names the line)
 */
export async function* csvRecords(
  body: Readable,
  fileName: string,
  maxRecordBytes = MAX_RECORD_BYTES,
): AsyncGenerator<CsvRecord> {
  const records = body.pipe(parser(maxRecordBytes));
  body.on('error', (error) => records.destroy(error));
  let row = 0;
  try {
    for await (const cells of records as AsyncIterable<string[]>) {
      row++;
      yield { row, cells };
    }
  } catch (error) {
    if (isCsvError(error)) {
      throw new RunError(
        'invalid_labels_file',
        `${fileName} is not valid CSV: ${error.message}. Fix the file (quotes must be closed and doubled inside quoted cells) and upload the drop again`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    // Leaving early (the header is all validate_drop reads) releases the connection.
    records.destroy();
    body.destroy();
  }
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
        `${fileName}: the header row names "${column}" ${String(positions.length)} times (it has ${has}); keep one "${column}" column`,
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
    throw new RunError(
      'invalid_labels_file',
      `${fileName}: the header row has ${has}; it needs ${REQUIRED} (missing ${missing}). Example header: id,label`,
    );
  }
  return { label, id, text };
}

/**
 * Checks the labels file's header, reading only as far as the header row.
 * @throws RunError invalid_labels_file, or drop_changed when the file is not the listed version
 */
export async function checkLabelsHeader(
  s3: S3Client,
  bucket: string,
  drop: string,
  labels: DropFile,
): Promise<LabelColumns> {
  if (labels.bytes === 0) {
    throw new RunError(
      'invalid_labels_file',
      `${labels.name} is empty; it needs a header row with ${REQUIRED}, then one row per held-out example`,
    );
  }
  const body = await openLabels(s3, bucket, drop, labels);
  for await (const record of csvRecords(body, labels.name, MAX_HEADER_BYTES)) {
    if (!isBlank(record)) return labelColumns(record.cells, labels.name);
  }
  // Only blank lines: nothing to read a header from.
  return labelColumns([], labels.name);
}

/** The labels file at the version validate_drop pinned. */
export async function openLabels(
  s3: S3Client,
  bucket: string,
  drop: string,
  labels: DropFile,
): Promise<Readable> {
  try {
    return await openPinnedObject(s3, { bucket, key: inboxKey(drop, labels.name), etag: labels.etag });
  } catch (error) {
    if (error instanceof ObjectChangedError || error instanceof ObjectMissingError) {
      throw new RunError(
        'drop_changed',
        `${labels.name} changed or was removed while this run was using it; upload the folder again, train.json last`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** csv-parse's errors carry a CSV_* code. */
function isCsvError(error: unknown): error is Error & { code: string } {
  return (
    error instanceof Error &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code.startsWith('CSV_')
  );
}
