/**
 * The upload reader on its own: what it keeps of a large file is bounded by the held-out sample,
 * whatever the file's size.
 */
import { describe, expect, it } from 'vitest';
import { DataFileReader } from '../../local/service/domain/index.js';

/** `rows` rows written in chunks of 1,000, CSV with ids or JSONL without. */
async function read(name: string, rows: number, keepRows: number) {
  const reader = new DataFileReader(name, keepRows);
  if (name.endsWith('.csv')) await reader.write(Buffer.from('id,text\n'));
  for (let start = 0; start < rows; start += 1000) {
    const lines: string[] = [];
    for (let row = start; row < Math.min(rows, start + 1000); row++) {
      lines.push(name.endsWith('.csv') ? `r${row},text of row ${row}\n` : `{"text":"text of row ${row}"}\n`);
    }
    await reader.write(Buffer.from(lines.join('')));
  }
  return reader.end();
}

describe('DataFileReader', () => {
  it.each(['big.csv', 'big.jsonl'])(
    'keeps only keepRows rows of a 100,000-row %s, and counts them all',
    async (name) => {
      const result = await read(name, 100_000, 7);
      expect(result.error).toBeUndefined();
      expect(result.rows).toBe(100_000);
      expect(result.sample).toHaveLength(7);
      expect(result.sample[6]).toEqual({
        id: name.endsWith('.csv') ? 'r6' : 'big.jsonl#7',
        text: 'text of row 6',
      });
    },
  );

  it('keeps no rows when no held-out example is wanted', async () => {
    const result = await read('big.jsonl', 5_000, 0);
    expect(result.sample).toEqual([]);
    expect(result.rows).toBe(5_000);
  });
});
