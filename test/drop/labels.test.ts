import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { csvRecords, labelColumns, type CsvRecord } from '../../lambdas/drop/labels-csv.js';
import {
  indexOfRecords,
  normaliseWhitespace,
  placeholderPattern,
  type HeldOutExample,
  type LabelIndex,
} from '../../lambdas/drop/labels.js';
import { runErrorOf, runErrorThrownBy } from '../helpers/run-errors.js';

/** The index of a labels file with this content, streamed in small chunks like a network body. */
function indexOf(csv: string, fileName = 'labels.csv', chunkBytes = 7): Promise<LabelIndex> {
  return indexOfBytes(Buffer.from(csv), chunkBytes, fileName);
}

function indexOfBytes(bytes: Buffer, chunkBytes: number, fileName = 'labels.csv'): Promise<LabelIndex> {
  const chunks = Array.from({ length: Math.ceil(bytes.length / chunkBytes) }, (_, index) =>
    bytes.subarray(index * chunkBytes, (index + 1) * chunkBytes),
  );
  return indexOfRecords(csvRecords(Readable.from(chunks), fileName), fileName);
}

function labelOf(index: LabelIndex, example: HeldOutExample): string {
  return index.match(example).label;
}

describe('whitespace normalisation', () => {
  it('trims and makes every run of white space one space, keeping case', () => {
    expect(normaliseWhitespace('  Great\t\tvalue,\n\r\n  REALLY  ')).toBe('Great value, REALLY');
    expect(normaliseWhitespace('a\u00A0\u2003b')).toBe('a b');
    expect(normaliseWhitespace(' \n ')).toBe('');
  });
});

describe('placeholder patterns', () => {
  it('is null for a text without placeholders', () => {
    expect(placeholderPattern('no placeholders [here] or [Here] or [e-mail]')).toBeNull();
  });

  it('escapes regex metacharacters around placeholders', () => {
    const pattern = placeholderPattern('Cost (USD): $5.00+tax? [EMAIL] a|b ^c* {2} \\d /x/ [ok]')!;
    expect(pattern.test('Cost (USD): $5.00+tax? me@x.org a|b ^c* {2} \\d /x/ [ok]')).toBe(true);
    expect(pattern.test('Cost (USD): $5X00+tax? me@x.org a|b ^c* {2} \\d /x/ [ok]')).toBe(false);
    expect(pattern.test('Cost (USD): $5.00+taxx me@x.org a|b ^c* {2} \\d /x/ [ok]')).toBe(false);
  });

  it('makes each placeholder stand for one or more characters, spaces included', () => {
    const pattern = placeholderPattern('Call [PHONE] or write to [EMAIL].')!;
    expect(pattern.test('Call +1 415-555-0100 or write to a.b@example.com.')).toBe(true);
    expect(pattern.test('Call (020) 7946 0958 or write to x.')).toBe(true);
    expect(pattern.test('Call  or write to a@b.co.')).toBe(false);
    expect(pattern.test('Call 1 or write to .')).toBe(false);
    expect(pattern.test('Call 1 or write to a@b.co')).toBe(false);
    // Two placeholders side by side need a character each.
    const adjacent = placeholderPattern('[EMAIL][PHONE]')!;
    expect(adjacent.test('ab')).toBe(true);
    expect(adjacent.test('a')).toBe(false);
  });

  it('places literals so a later one still fits (leftmost placement is always enough)', () => {
    const pattern = placeholderPattern('[X] and [Y] and [Z]')!;
    expect(pattern.test('cats and dogs and birds and fish')).toBe(true);
    expect(pattern.test('a and b and c')).toBe(true);
    expect(pattern.test('a and b andc')).toBe(false);
    expect(placeholderPattern('x [A] y [B] x')!.test('x y y x x')).toBe(true);
  });

  it('stays linear on a text that almost matches (no catastrophic backtracking)', () => {
    const pattern = placeholderPattern('[A] [B] [C] [D] [E] [F] end')!;
    const text = `${'a '.repeat(20_000)}the end.`;
    const started = performance.now();
    expect(pattern.test(text)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('the labels file', () => {
  it('matches an id exactly: case and spaces kept', async () => {
    const index = await indexOf('id,label\nr-1,positive\nR-2,negative\n r-3,neutral\n');
    expect(labelOf(index, { id: 'r-1', text: 'whatever' })).toBe('positive');
    expect(labelOf(index, { id: 'R-2', text: '' })).toBe('negative');
    expect(runErrorThrownBy(() => index.match({ id: 'r-2', text: 'x' })).code).toBe('label_missing');
    expect(runErrorThrownBy(() => index.match({ id: 'r-3', text: 'x' })).code).toBe('label_missing');
    expect(labelOf(index, { id: ' r-3', text: 'x' })).toBe('neutral');
  });

  it('matches a text after whitespace normalisation, case kept', async () => {
    const index = await indexOf(
      'text,label\n"  Great   value,\n really  ",positive\nLoud and cheap.,negative\n',
    );
    expect(labelOf(index, { id: 'a#1', text: 'Great value, really' })).toBe('positive');
    expect(labelOf(index, { id: 'a#2', text: '\tLoud  and\ncheap. ' })).toBe('negative');
    expect(runErrorThrownBy(() => index.match({ id: 'a#3', text: 'loud and cheap.' })).code).toBe(
      'label_missing',
    );
  });

  it('lets [EMAIL], [PHONE] and any [UPPER_CASE] placeholder stand for what the service masked', async () => {
    const index = await indexOf(
      [
        'text,label',
        'Contact me at a.kowalski@example.com if you need photos.,positive',
        '"I left my number (+49 30 901820) but nobody called back.",negative',
        'See https://example.com/x?a=1 or mail me@x.io or call 555 123 4567 today,neutral',
        'Card 4111 1111 1111 1111 was charged twice,negative',
      ].join('\n'),
    );
    expect(labelOf(index, { id: 'e', text: 'Contact me at [EMAIL] if you need photos.' })).toBe('positive');
    expect(labelOf(index, { id: 'p', text: 'I left my number ([PHONE]) but nobody called back.' })).toBe(
      'negative',
    );
    expect(labelOf(index, { id: 'm', text: 'See [URL] or mail [EMAIL] or call [PHONE] today' })).toBe(
      'neutral',
    );
    expect(labelOf(index, { id: 'c', text: 'Card [CREDIT_CARD_9] was charged twice' })).toBe('negative');
    // Lower case is not a placeholder: it is text, and the user's copy does not have it.
    expect(
      runErrorThrownBy(() => index.match({ id: 'l', text: 'Contact me at [email] if you need photos.' }))
        .code,
    ).toBe('label_missing');
  });

  it('names the example, its text and how to fix it when no row matches', async () => {
    const both = await indexOf('id,text,label\nr-1,hello,positive\n');
    expect(
      runErrorThrownBy(() => both.match({ id: 'reviews.csv#7', text: 'Call me at [PHONE]' })).detail,
    ).toBe(
      'no row of labels.csv matches held-out example "reviews.csv#7" (text: "Call me at [PHONE]"): add a row ' +
        'whose id is "reviews.csv#7" or whose text is the example\'s text (your original; [EMAIL], [PHONE] and ' +
        'other [UPPER_CASE] placeholders stand for what the service masked) with its label',
    );
    const byId = await indexOf('id,label\nr-1,positive\n', 'answers.csv');
    expect(runErrorThrownBy(() => byId.match({ id: 'r-2', text: 't' })).detail).toBe(
      'no row of answers.csv matches held-out example "r-2" (text: "t"): add a row whose id is "r-2" with its label',
    );
  });

  it('accepts several matching rows that agree, and names the rows when they do not', async () => {
    const csv = [
      'id,text,label', // row 1
      ',Broke after a week.,negative', // row 2
      '', // row 3: blank lines count as rows
      ',"Broke after\na week.",negative', // row 4: one row over two lines
      ',Arrived early.,positive', // row 5
      ',Arrived   early.,negative', // row 6
      ',Mail [EMAIL] now,neutral', // row 7
    ].join('\n');
    const index = await indexOf(csv);
    const agreeing = index.match({ id: 'x#1', text: 'Broke after a week.' });
    expect(agreeing.label).toBe('negative');
    expect(agreeing.rows.map((row) => row.row)).toEqual([2, 4]);

    const ambiguous = runErrorThrownBy(() => index.match({ id: 'x#2', text: 'Arrived early.' }));
    expect(ambiguous.code).toBe('label_ambiguous');
    expect(ambiguous.detail).toBe(
      'labels.csv: rows that match held-out example "x#2" (text: "Arrived early.") give different labels ' +
        '(row 5 says "positive"; row 6 says "negative"); make those rows agree or keep one of them',
    );

    // Through a placeholder: rows 5 and 6 match "Arrived [X]", and disagree.
    expect(runErrorThrownBy(() => index.match({ id: 'x#3', text: 'Arrived [X]' })).code).toBe(
      'label_ambiguous',
    );
    // A row that holds the placeholder itself matches too.
    expect(labelOf(index, { id: 'x#4', text: 'Mail [EMAIL] now' })).toBe('neutral');
  });

  it('takes the rows of the example id first, its text only when no row has the id', async () => {
    const index = await indexOf(
      'id,text,label\nr-1,Same words.,positive\nr-2,Same words.,negative\n,Other.,neutral\n',
    );
    expect(labelOf(index, { id: 'r-1', text: 'Same words.' })).toBe('positive');
    expect(labelOf(index, { id: 'r-2', text: 'Same words.' })).toBe('negative');
    expect(labelOf(index, { id: 'data.csv#3', text: 'Other.' })).toBe('neutral');
    expect(runErrorThrownBy(() => index.match({ id: 'data.csv#9', text: 'Same words.' })).code).toBe(
      'label_ambiguous',
    );
  });

  it('reads quoted cells: commas, doubled quotes, line breaks; tolerates a BOM and CRLF', async () => {
    const csv =
      '\uFEFFlabel,text\r\n' +
      'positive,"She said ""great"", twice"\r\n' +
      'negative,"Line one\r\nline two"\r\n';
    const index = await indexOf(csv);
    expect(index.columns).toEqual({ label: 0, id: undefined, text: 1 });
    expect(labelOf(index, { id: 'a', text: 'She said "great", twice' })).toBe('positive');
    expect(labelOf(index, { id: 'b', text: 'Line one line two' })).toBe('negative');
    expect(index.size).toBe(2);
  });

  it('trims labels and header names, skips rows with neither id nor text, reads short rows', async () => {
    const index = await indexOf(' id , label \nr-1, positive \n,neutral\n,\nr-2\n');
    expect(labelOf(index, { id: 'r-1', text: '' })).toBe('positive');
    expect(index.match({ id: 'r-2', text: '' }).label).toBe('');
    expect(index.size).toBe(2);
  });

  it('refuses a file that is not CSV, naming the line and the cause', async () => {
    const unclosed = await runErrorOf(indexOf('id,label\nr-1,positive\nr-2,"negative\nr-3,neutral\n'));
    expect(unclosed.code).toBe('invalid_labels_file');
    expect(unclosed.detail).toBe(
      'labels.csv is not valid CSV: a quote opened in the row starting on line 3 is never closed. Close it (a quote inside a quoted cell is written twice: "") and upload the drop again',
    );
    // A quote left open in a large file runs into the record size limit far below it: the
    // message still names the line the row started on.
    const far = `id,label\nr-1,"positive\n${'r-2,negative\n'.repeat(100_000)}`;
    expect((await runErrorOf(indexOf(far, 'labels.csv', 64 * 1024))).detail).toMatch(
      /^labels\.csv is not valid CSV: a quote opened in the row starting on line 2 is never closed\. /,
    );
    // A row over 1 MiB on its own line: csv-parse's words, which name it.
    const long = await runErrorOf(indexOf(`id,label\nr-1,${'x'.repeat(1100 * 1024)}\n`, 'l.csv', 64 * 1024));
    expect(long.detail).toMatch(/^l\.csv is not valid CSV: Max Record Size: .* at line 2\. Fix the file /);
    // A quote in the middle of an unquoted cell (csv-parse's code for it has no CSV_ prefix).
    const inside = await runErrorOf(indexOf('id,label\nr-1,positive\nr"2,negative\n'));
    expect(inside.code).toBe('invalid_labels_file');
    expect(inside.detail).toContain('line 3');
    const after = await runErrorOf(indexOf('id,label\n"r-1"x,positive\n'));
    expect(after.detail).toContain('line 2');
    expect(after.detail).not.toContain('never closed');
  });

  it('reads a file whose line ends change midway (CRLF rows, then LF rows), every row at its number', async () => {
    const rows = Array.from({ length: 30 }, (_, index) => `r${String(index + 1).padStart(3, '0')},negative`);
    const csv = `id,label\r\n${rows.slice(0, 2).join('\r\n')}\r\n${rows.slice(2).join('\n')}\n`;
    const index = await indexOf(csv);
    expect(index.size).toBe(30);
    expect(index.match({ id: 'r021', text: '' })).toEqual({
      label: 'negative',
      rows: [{ row: 22, label: 'negative', id: 'r021', text: undefined }],
    });
    // LF first then CRLF, and old Mac CR-only ends, too.
    expect((await indexOf('id,label\nr1,a\r\nr2,b\r\n')).match({ id: 'r2', text: '' }).label).toBe('b');
    expect((await indexOf('id,label\rr1,a\rr2,b\r')).match({ id: 'r2', text: '' }).label).toBe('b');
  });

  it('reads 1,000,000 rows after a CRLF first line, every row (the reported file failed at line 70,707)', async () => {
    const rows = 1_000_000;
    // CRLF ends for the header, LF below: csv-parse took the first line's end for the file's
    // and read the rest as one record until it passed 1 MiB.
    function* file(): Generator<Buffer> {
      yield Buffer.from('id,label\r\n');
      for (let start = 0; start < rows; start += 10_000) {
        const lines = Array.from({ length: 10_000 }, (_, offset) => `r${String(start + offset)},positive\n`);
        yield Buffer.from(lines.join(''));
      }
    }
    let last: CsvRecord | undefined;
    for await (const record of csvRecords(Readable.from(file()), 'labels.csv')) last = record;
    expect(last).toEqual({ row: rows + 1, cells: ['r999999', 'positive'] });
  }, 60_000);

  it('refuses bytes that are not UTF-8, naming the byte offset, wherever the chunks split', async () => {
    const bytes = Buffer.concat([
      Buffer.from('id,label\nr1,très bien\nr2,caf'),
      Buffer.from([0xe9]),
      Buffer.from(',\n'),
    ]);
    for (const chunkBytes of [1, 2, 3, 7, 64]) {
      const error = await runErrorOf(indexOfBytes(bytes, chunkBytes));
      expect(error.code).toBe('invalid_labels_file');
      expect(error.detail).toBe(
        'labels.csv is not UTF-8 text: the byte at offset 29 (0xe9) does not start a valid UTF-8 character. Save the file as UTF-8 and upload it again',
      );
    }
    // A character cut off at the end of the file.
    const cut = Buffer.from('id,label\nr1,😀').subarray(0, -1);
    expect((await runErrorOf(indexOfBytes(cut, 5))).detail).toContain('offset 12 (0xf0)');
    // Characters split across chunks, and a U+FFFD the file really holds, are fine.
    const fine = await indexOfBytes(Buffer.from('id,label\nr1,😀 é \uFFFD\n'), 1);
    expect(fine.match({ id: 'r1', text: '' }).label).toBe('😀 é \uFFFD');
  });

  it('refuses a header without label, or without id and text', async () => {
    expect(runErrorThrownBy(() => labelColumns(['id', 'text'], 'labels.csv')).detail).toBe(
      'labels.csv: the header row has "id", "text"; it needs a "label" column and an "id" or a "text" column ' +
        '(missing "label"). Example header: id,label',
    );
    expect(runErrorThrownBy(() => labelColumns(['label', 'Text'], 'labels.csv')).detail).toContain(
      'has "label", "Text"; it needs a "label" column and an "id" or a "text" column (missing "id" or "text")',
    );
    expect(runErrorThrownBy(() => labelColumns(['name'], 'l.csv')).detail).toContain(
      '(missing "label" and "id" or "text")',
    );
    expect(runErrorThrownBy(() => labelColumns([], 'l.csv')).detail).toContain(
      'the header row has no columns',
    );
    expect(runErrorThrownBy(() => labelColumns(['id', 'label', 'label'], 'l.csv')).detail).toBe(
      'l.csv: the header row names "label" 2 times (it has "id", "label", "label"); keep one "label" column',
    );
    const empty = await runErrorOf(indexOf(''));
    expect(empty.code).toBe('invalid_labels_file');
  });

  it('matches placeholder texts in near-linear time: each example tries a handful of texts, not all', async () => {
    async function patternTestsFor(examples: number): Promise<number> {
      const rows = Array.from(
        { length: examples },
        (_, n) =>
          `"Order ${String(n)} arrived, write to u${String(n)}@example.com or call +1 555 ${String(n)}",x`,
      );
      const index = await indexOf(['text,label', ...rows].join('\n'), 'labels.csv', 64 * 1024);
      for (let n = 0; n < examples; n++) {
        const masked = `Order ${String(n)} arrived, write to [EMAIL] or call [PHONE]`;
        expect(labelOf(index, { id: `data.csv#${String(n)}`, text: masked })).toBe('x');
      }
      // A text that starts and ends with a placeholder has nothing to look up: it tries all.
      expect(labelOf(index, { id: 'any', text: '[NAME] arrived, write to [EMAIL] or call [PHONE]' })).toBe(
        'x',
      );
      return index.patternTests - examples;
    }
    const small = await patternTestsFor(1_000);
    const large = await patternTestsFor(10_000);
    // "Order 1" is a prefix of "Order 10".."Order 19", ..., so a few candidates each: linear.
    expect(small).toBeLessThan(1_000 * 15);
    expect(large).toBeLessThan(10_000 * 15);
    expect(large / small).toBeLessThan(15);
  });

  it('looks texts up by their suffix when many share the prefix: still a handful tried each', async () => {
    async function patternTestsFor(examples: number): Promise<number> {
      const rows = Array.from(
        { length: examples },
        (_, n) => `"Hello Ann Lee, your order ${String(n)} has shipped",${n % 2 === 0 ? 'x' : 'y'}`,
      );
      const index = await indexOf(['text,label', ...rows].join('\n'), 'labels.csv', 64 * 1024);
      for (let n = 0; n < examples; n++) {
        // Every text starts with "Hello ": the prefix alone would leave them all to try.
        const masked = `Hello [NAME], your order ${String(n)} has shipped`;
        expect(labelOf(index, { id: `data.csv#${String(n)}`, text: masked })).toBe(n % 2 === 0 ? 'x' : 'y');
      }
      return index.patternTests;
    }
    const small = await patternTestsFor(1_000);
    const large = await patternTestsFor(10_000);
    // Only the text ending ", your order <n> has shipped" is tried, not every text.
    expect(small).toBeLessThan(1_000 * 15);
    expect(large).toBeLessThan(10_000 * 15);
    expect(large / small).toBeLessThan(15);
  });

  it('indexes a large file and answers placeholder examples quickly', async () => {
    const rows = Array.from(
      { length: 20_000 },
      (_, index) =>
        `r-${String(index)},"Order ${String(index)} was fine, mail me at u${String(index)}@example.com",positive`,
    );
    const index = await indexOf(['id,text,label', ...rows].join('\n'), 'labels.csv', 64 * 1024);
    expect(index.size).toBe(20_000);
    const started = performance.now();
    expect(labelOf(index, { id: 'd#1', text: 'Order 19999 was fine, mail me at [EMAIL]' })).toBe('positive');
    expect(labelOf(index, { id: 'r-123', text: '' })).toBe('positive');
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
