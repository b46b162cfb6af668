/**
 * Reads an uploaded data file while it streams in: CSV (header with a `text` column, optional
 * `id`) or JSON Lines (objects with string `text`, optional string or number `id`); every file
 * needs at least one row. Only the
 * first `keepRows` rows are kept (the held-out sample), plus the explicit ids (duplicate check),
 * so a huge upload does not cost its size in memory.
 */
import { once } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import { parse as parseCsv, type Parser as CsvParser } from 'csv-parse';

/** A row kept for the held-out sample. */
export interface SampleRow {
  /** The row's own id, or "<file name>#<row>" when it has none. */
  id: string;
  text: string;
}

export interface FileReadResult {
  rows: number;
  sample: SampleRow[];
  /** Ids the data itself carries (not the generated "<file>#<row>" ones). */
  explicitIds: ReadonlySet<string>;
  /** Why the file is unreadable ("<reason>", without the file name); undefined when readable. */
  error: string | undefined;
}

/**
 * Longest CSV record or JSONL line accepted. It bounds memory for a file without line breaks,
 * and time too: csv-parse slows down on one ever-growing record (8 MiB took ~11 s; 256 KiB ~0.3 s),
 * while 256 KiB is far more than one row of text needs.
 */
export const MAX_RECORD_BYTES = 256 * 1024;

type Format = 'csv' | 'jsonl' | undefined;

function formatOf(fileName: string): Format {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  return undefined;
}

/** Consumes one upload: write() each chunk in order, then end(). */
export class DataFileReader {
  private rows = 0;
  private readonly sample: SampleRow[] = [];
  private readonly explicitIds = new Set<string>();
  private error: string | undefined;
  private readonly csv: CsvState | undefined;
  private readonly jsonl: JsonlState | undefined;

  constructor(
    private readonly fileName: string,
    private readonly keepRows: number,
  ) {
    const format = formatOf(fileName);
    if (format === undefined) this.error = 'unsupported file type (expected .csv, .jsonl or .ndjson)';
    if (format === 'csv') this.csv = this.startCsv();
    if (format === 'jsonl') this.jsonl = { decoder: new StringDecoder('utf8'), pending: '', line: 0 };
  }

  async write(chunk: Buffer): Promise<void> {
    if (this.error !== undefined) return;
    if (this.csv) await this.writeCsv(this.csv, chunk);
    if (this.jsonl) this.writeJsonl(this.jsonl, this.jsonl.decoder.write(chunk));
  }

  async end(): Promise<FileReadResult> {
    if (this.error === undefined && this.csv) await this.endCsv(this.csv);
    if (this.error === undefined && this.jsonl) {
      this.writeJsonl(this.jsonl, this.jsonl.decoder.end());
      this.readJsonlLine(this.jsonl, this.jsonl.pending);
      if (this.rows === 0) this.fail('no rows');
    }
    return { rows: this.rows, sample: this.sample, explicitIds: this.explicitIds, error: this.error };
  }

  private fail(reason: string): void {
    this.error ??= reason;
  }

  private addRow(id: string | undefined, text: string, where: string): void {
    this.rows += 1;
    if (id !== undefined) {
      if (this.explicitIds.has(id)) {
        this.fail(`${where}: duplicate id ${JSON.stringify(id)}`);
        return;
      }
      this.explicitIds.add(id);
    }
    if (this.sample.length < this.keepRows) {
      this.sample.push({ id: id ?? `${this.fileName}#${this.rows}`, text });
    }
  }

  // --- CSV --------------------------------------------------------------------------------

  private startCsv(): CsvState {
    const parser = parseCsv({ bom: true, skip_empty_lines: true, max_record_size: MAX_RECORD_BYTES });
    const state: CsvState = { parser, textColumn: -1, idColumn: -1, sawHeader: false };
    parser.on('data', (record: unknown) => {
      if (this.error === undefined && Array.isArray(record)) this.readCsvRecord(state, record as string[]);
    });
    parser.on('error', (error: Error & { code?: string }) => {
      const dataRow = parser.info.records;
      const reason =
        error.code === 'CSV_MAX_RECORD_SIZE' ? `longer than ${MAX_RECORD_BYTES} bytes` : error.message;
      this.fail(`${dataRow === 0 ? 'header' : `row ${dataRow}`}: ${reason}`);
    });
    return state;
  }

  private readCsvRecord(state: CsvState, record: string[]): void {
    if (!state.sawHeader) {
      state.sawHeader = true;
      const names = record.map((name) => name.trim());
      state.textColumn = names.indexOf('text');
      state.idColumn = names.indexOf('id');
      if (state.textColumn < 0) this.fail('header: no "text" column');
      else if (names.lastIndexOf('text') !== state.textColumn) this.fail('header: "text" column twice');
      else if (state.idColumn >= 0 && names.lastIndexOf('id') !== state.idColumn)
        this.fail('header: "id" column twice');
      return;
    }
    const text = record[state.textColumn] ?? '';
    const id = state.idColumn >= 0 ? record[state.idColumn] : undefined;
    // An empty id cell means the row has no id of its own.
    this.addRow(id === '' ? undefined : id, text, `row ${this.rows + 1}`);
  }

  private async writeCsv(state: CsvState, chunk: Buffer): Promise<void> {
    // A parse error ends the wait as a 'drain' would (once() rejects on 'error'); fail() has it.
    if (!state.parser.write(chunk)) await once(state.parser, 'drain').catch(() => undefined);
  }

  private async endCsv(state: CsvState): Promise<void> {
    const ended = once(state.parser, 'end').catch(() => undefined);
    state.parser.end();
    await ended;
    if (this.error !== undefined) return;
    if (!state.sawHeader) this.fail('no header row');
    else if (this.rows === 0) this.fail('no data rows');
  }

  // --- JSON Lines ---------------------------------------------------------------------------

  private writeJsonl(state: JsonlState, text: string): void {
    // Only the new text is scanned for line breaks, so a long line costs linear time.
    let lineStart = 0;
    let newline = text.indexOf('\n');
    while (newline >= 0 && this.error === undefined) {
      const line = state.pending + text.slice(lineStart, newline);
      state.pending = '';
      this.readJsonlLine(state, line);
      lineStart = newline + 1;
      newline = text.indexOf('\n', lineStart);
    }
    if (this.error !== undefined) return;
    state.pending += text.slice(lineStart);
    if (state.pending.length > MAX_RECORD_BYTES) {
      this.fail(`line ${state.line + 1}: longer than ${MAX_RECORD_BYTES} bytes`);
    }
  }

  private readJsonlLine(state: JsonlState, rawLine: string): void {
    if (this.error !== undefined) return;
    state.line += 1;
    const line = rawLine.trim();
    if (line === '') return;
    const row = jsonlRow(line);
    if (typeof row === 'string') this.fail(`line ${state.line}: ${row}`);
    else this.addRow(row.id, row.text, `line ${state.line}`);
  }
}

/** A JSON Lines row's id (a string or a number) and text, or why the line is not a row. */
function jsonlRow(line: string): { id: string | undefined; text: string } | string {
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch {
    return 'not valid JSON';
  }
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return 'not a JSON object';
  const { text, id } = row as Record<string, unknown>;
  if (typeof text !== 'string') return '"text" must be a string';
  if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))
    return { id: String(id), text };
  return id === undefined ? { id: undefined, text } : '"id" must be a string or a number';
}

interface CsvState {
  parser: CsvParser;
  textColumn: number;
  idColumn: number;
  sawHeader: boolean;
}

interface JsonlState {
  decoder: StringDecoder;
  pending: string;
  /** Physical line number of the last line read (blank ones included). */
  line: number;
}
