/**
 * Properties of label matching (lambdas/drop/labels.ts), over generated labels files: written as
 * any CSV writer would (quoted cells with commas, quotes and line breaks, CRLF, a BOM), read back
 * through the real parser, every held-out example gets its row's label by id, by text whatever
 * the white space, and by text when the service masked part of it; rows that disagree are named.
 */
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvRecords } from '../../lambdas/drop/labels-csv.js';
import { indexOfRecords, normaliseWhitespace, type LabelIndex } from '../../lambdas/drop/labels.js';
import { RunError } from '../../lambdas/core/errors/index.js';

/** A cell as a CSV writer quotes it: always quoted, quotes doubled. */
function cell(value: string): string {
  return `"${value.replaceAll('"', '""')}"`;
}

interface CsvStyle {
  readonly bom: boolean;
  readonly crlf: boolean;
  /** Bytes per chunk the file arrives in (a network body). */
  readonly chunkBytes: number;
}

const csvStyle: fc.Arbitrary<CsvStyle> = fc.record({
  bom: fc.boolean(),
  crlf: fc.boolean(),
  chunkBytes: fc.integer({ min: 1, max: 64 }),
});

function indexOf(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  style: CsvStyle,
): Promise<LabelIndex> {
  const eol = style.crlf ? '\r\n' : '\n';
  const text = `${style.bom ? '\uFEFF' : ''}${[header, ...rows].map((row) => row.map(cell).join(',')).join(eol)}${eol}`;
  const bytes = Buffer.from(text);
  const chunks = Array.from({ length: Math.ceil(bytes.length / style.chunkBytes) }, (_, index) =>
    bytes.subarray(index * style.chunkBytes, (index + 1) * style.chunkBytes),
  );
  return indexOfRecords(csvRecords(Readable.from(chunks), 'labels.csv'), 'labels.csv');
}

/** Text a user might hold: any characters, commas, quotes and line breaks included, not blank. */
const anyText = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
  .map((text) => text.replaceAll('\u0000', ''))
  .filter((text) => text.trim() !== '' && !/\[[A-Z][A-Z0-9_]*\]/.test(text));
const label = fc.constantFrom('positive', 'negative', 'neutral', 'très bien', 'a, b', 'say "hi"');
const id = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 12 })
  .filter((value) => value.trim() !== '');

describe('label matching (properties)', () => {
  it('every example gets its own row by id, whatever the ids and the CSV style', async () => {
    const rows = fc.uniqueArray(fc.tuple(id, label), {
      minLength: 1,
      maxLength: 12,
      selector: ([key]) => key,
    });
    await fc.assert(
      fc.asyncProperty(rows, csvStyle, async (entries, style) => {
        const index = await indexOf(['id', 'label'], entries, style);
        for (const [exampleId, expected] of entries) {
          // The id is taken exactly; the label is trimmed.
          expect(index.match({ id: exampleId, text: 'not used' }).label).toBe(expected.trim());
        }
      }),
    );
  });

  it('matches by text whatever the white space around and inside it', async () => {
    const spacing = fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', ' \n ');
    await fc.assert(
      fc.asyncProperty(anyText, label, spacing, csvStyle, async (text, expected, space, style) => {
        const index = await indexOf(['text', 'label'], [[`${space}${text}${space}`, expected]], style);
        const reflowed = normaliseWhitespace(text).split(' ').join(space);
        expect(index.match({ id: 'data.csv#1', text: `${space}${reflowed}` }).label).toBe(expected.trim());
      }),
    );
  });

  it('matches a text the service masked: a placeholder stands for what the user still has', async () => {
    const secret = fc.oneof(
      fc.emailAddress(),
      fc.stringMatching(/^\+?[0-9]{3}[ -][0-9]{3}[ -][0-9]{4}$/),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).filter((value) => value.trim() !== ''),
    );
    const placeholder = fc.constantFrom('[EMAIL]', '[PHONE]', '[URL]', '[NAME_1]');
    await fc.assert(
      fc.asyncProperty(
        anyText,
        secret,
        anyText,
        placeholder,
        label,
        csvStyle,
        async (before, hidden, after, mask, expected, style) => {
          const original = `${before} ${hidden} ${after}`;
          const index = await indexOf(['text', 'label'], [[original, expected]], style);
          expect(index.match({ id: 'x', text: `${before} ${mask} ${after}` }).label).toBe(expected.trim());
        },
      ),
    );
  });

  it('rows for one example that disagree are refused, naming every row; rows that agree are one answer', async () => {
    await fc.assert(
      fc.asyncProperty(
        id,
        fc.array(label, { minLength: 2, maxLength: 6 }),
        csvStyle,
        async (exampleId, labels, style) => {
          const index = await indexOf(
            ['id', 'label'],
            labels.map((given) => [exampleId, given]),
            style,
          );
          const distinct = new Set(labels.map((given) => given.trim()));
          let outcome: RunError | string;
          try {
            outcome = index.match({ id: exampleId, text: '' }).label;
          } catch (error) {
            if (!(error instanceof RunError)) throw error;
            outcome = error;
          }
          if (distinct.size === 1) {
            expect(outcome).toBe(labels[0]?.trim());
            return;
          }
          expect(outcome).toBeInstanceOf(RunError);
          const refusal = outcome as RunError;
          expect(refusal.code).toBe('label_ambiguous');
          // Rows are numbered as a spreadsheet shows them: the header is row 1.
          for (const row of labels.map((_, position) => String(position + 2)))
            expect(refusal.detail).toContain(row);
        },
      ),
    );
  });

  it('an example no row matches is label_missing, naming the example', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(id, { minLength: 2, maxLength: 8 }), csvStyle, async (ids, style) => {
        const [missing, ...present] = ids;
        const index = await indexOf(
          ['id', 'label'],
          present.map((key) => [key, 'positive']),
          style,
        );
        try {
          index.match({ id: missing ?? '', text: 'nothing like it' });
          throw new Error('matched');
        } catch (error) {
          expect(error).toBeInstanceOf(RunError);
          expect((error as RunError).code).toBe('label_missing');
          expect((error as RunError).detail).toContain(JSON.stringify(missing));
        }
      }),
    );
  });
});
