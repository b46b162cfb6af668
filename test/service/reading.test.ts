/** Reading uploaded data: CSV and JSONL, row ids, unreadable files (start_over) and masking. */
import { describe, expect, it } from 'vitest';
import {
  api,
  completeFile,
  createDataset,
  datasetAt,
  expectError,
  expectStatus,
  labelAll,
  rawRequest,
  useHarnesses,
} from '../helpers/service-http.js';
import type { DatasetRecord, Harness, TestFile } from '../helpers/service-http.js';

const start = useHarnesses();

/** Held-out examples of a dataset whose every row is held out (heldOutCount >= rows). */
async function examplesOf(h: Harness, files: TestFile[]): Promise<{ id: string; text: string }[]> {
  const ds = await datasetAt(h, 'labeling', { files });
  expect(ds).toMatchObject({ status: 'labeling', step: 3, next_action: 'label_examples' });
  const tasks = await labelAll(h, ds.id);
  return tasks.map((t) => t.example).sort((a, b) => a.id.localeCompare(b.id));
}

/** Walks a dataset through reading and returns the record once the reading phase is over. */
async function readDataset(h: Harness, files: TestFile[]): Promise<DatasetRecord> {
  return datasetAt(h, 'read', { files });
}

describe('reading CSV', () => {
  it('uses the id column as example id', async () => {
    const h = await start({ heldOutCount: 10 });
    const csv = 'id,text,extra\nA-1,first row,x\nB-2,"second, with comma",y\n42,"multi\nline",z\n';
    const examples = await examplesOf(h, [{ name: 'data.csv', content: csv }]);
    expect(examples).toEqual([
      { id: '42', text: 'multi\nline' },
      { id: 'A-1', text: 'first row' },
      { id: 'B-2', text: 'second, with comma' },
    ]);
  });

  it('numbers rows "<file>#<n>" from 1 (header excluded) without an id column', async () => {
    const h = await start({ heldOutCount: 10 });
    const csv = 'label,text\npos,alpha\nneg,beta\npos,gamma\n';
    const examples = await examplesOf(h, [{ name: 'plain.csv', content: csv }]);
    expect(examples).toEqual([
      { id: 'plain.csv#1', text: 'alpha' },
      { id: 'plain.csv#2', text: 'beta' },
      { id: 'plain.csv#3', text: 'gamma' },
    ]);
  });

  it('caps the held-out sample at the number of rows', async () => {
    const h = await start({ heldOutCount: 5 });
    const ds = await datasetAt(h, 'labeling', { files: [{ name: 'two.csv', content: 'text\none\ntwo\n' }] });
    const next = await api<{ remaining: number }>(h, 'GET', `/v1/datasets/${ds.id}/labels/next`);
    expect(next.body.remaining).toBe(2);
  });
});

describe('reading text faithfully', () => {
  it('keeps multi-byte characters split across upload chunks, CRLF and a BOM', async () => {
    const h = await start({ heldOutCount: 10 });
    const texts = [1, 2, 3].map((i) => `${'é😀中'.repeat(4000)} ${i}`);
    const csv = '\uFEFFid,text\r\n' + texts.map((t, i) => `u${i},${t}`).join('\r\n') + '\r\n';
    const bytes = Buffer.from(csv);
    const ds = await createDataset(h, [{ name: 'utf8.csv', content: bytes }]);
    // Odd-sized pieces so that chunk edges fall inside multi-byte characters.
    const pieces: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 1001) pieces.push(bytes.subarray(at, at + 1001));
    const put = await rawRequest(ds.files[0]!.upload_url!, 'PUT', pieces, {
      'content-length': String(bytes.length),
    });
    expectStatus(put, 200);
    expectStatus(await completeFile(h, ds.id, ds.files[0]!.id), 200);
    h.service.clock.advance(h.options.readingMs);
    expectStatus(await api(h, 'POST', `/v1/datasets/${ds.id}/structure`, { body: {} }), 202);
    h.service.clock.advance(h.options.structuringMs);
    const examples = (await labelAll(h, ds.id))
      .map((t) => t.example)
      .sort((a, b) => a.id.localeCompare(b.id));
    expect(examples).toEqual(texts.map((text, i) => ({ id: `u${i}`, text })));
  });

  it('reads JSONL with CRLF line ends', async () => {
    const h = await start({ heldOutCount: 10 });
    const jsonl = '{"id":"a","text":"first"}\r\n{"id":"b","text":"second"}\r\n';
    expect(await examplesOf(h, [{ name: 'crlf.jsonl', content: jsonl }])).toEqual([
      { id: 'a', text: 'first' },
      { id: 'b', text: 'second' },
    ]);
  });
});

describe('reading JSONL', () => {
  it('reads .jsonl with string and number ids, numbering non-blank lines otherwise', async () => {
    const h = await start({ heldOutCount: 10 });
    const jsonl = [
      JSON.stringify({ id: 'x1', text: 'one' }),
      '',
      JSON.stringify({ id: 7, text: 'two' }),
      JSON.stringify({ text: 'three', lang: 'en' }),
      '   ',
      JSON.stringify({ text: 'four' }),
    ].join('\n');
    const examples = await examplesOf(h, [{ name: 'rows.jsonl', content: jsonl }]);
    expect(examples).toEqual([
      { id: '7', text: 'two' },
      { id: 'rows.jsonl#3', text: 'three' },
      { id: 'rows.jsonl#4', text: 'four' },
      { id: 'x1', text: 'one' },
    ]);
  });

  it('reads .ndjson, and CSV and JSONL files together', async () => {
    const h = await start({ heldOutCount: 10 });
    const examples = await examplesOf(h, [
      { name: 'a.ndjson', content: `${JSON.stringify({ text: 'from ndjson' })}\n` },
      { name: 'b.csv', content: 'text\nfrom csv\n' },
    ]);
    expect(examples).toEqual([
      { id: 'a.ndjson#1', text: 'from ndjson' },
      { id: 'b.csv#1', text: 'from csv' },
    ]);
  });
});

describe('unreadable data -> start_over', () => {
  const good: TestFile = { name: 'good.csv', content: 'id,text\ng1,fine\n' };
  const cases: [string, TestFile, RegExp?][] = [
    ['an unsupported extension', { name: 'notes.txt', content: 'just text\n' }, /unsupported/i],
    ['a CSV without a text column', { name: 'bad.csv', content: 'id,body\n1,hello\n' }],
    ['a CSV with a header only', { name: 'bad.csv', content: 'id,text\n' }],
    ['an empty CSV', { name: 'bad.csv', content: '' }],
    ['a CSV row with too many fields', { name: 'bad.csv', content: 'id,text\n1,ok\n2,too,many\n' }, /row/i],
    ['a CSV with an unclosed quote', { name: 'bad.csv', content: 'id,text\n1,"never closed\n' }],
    ['a CSV repeating an id', { name: 'bad.csv', content: 'id,text\n1,one\n1,again\n' }],
    ['a JSONL line that is not JSON', { name: 'bad.jsonl', content: '{"text":"ok"}\n{"text": nope}\n' }],
    ['a JSONL line that is not an object', { name: 'bad.jsonl', content: '{"text":"ok"}\n["text"]\n' }],
    ['a JSONL line without text', { name: 'bad.jsonl', content: '{"text":"ok"}\n{"body":"x"}\n' }],
    ['a JSONL text that is not a string', { name: 'bad.jsonl', content: '{"text":5}\n' }],
    [
      'a JSONL id that is neither string nor number',
      { name: 'bad.jsonl', content: '{"id":true,"text":"a"}\n' },
    ],
  ];

  it.each(cases)('%s names the file in error', async (_label, bad, reason) => {
    const h = await start();
    const ds = await readDataset(h, [good, bad]);
    expect(ds).toMatchObject({ status: 'unreadable', step: 1, next_action: 'start_over' });
    expect(ds.error).toEqual(expect.any(String));
    expect(ds.error!.startsWith(`${bad.name}: `)).toBe(true);
    if (reason) expect(ds.error).toMatch(reason);
  });

  it('refuses a dataset without any row (a JSONL file of blank lines), naming the file', async () => {
    const h = await start();
    const ds = await readDataset(h, [{ name: 'blank.jsonl', content: '\n  \n\n' }]);
    expect(ds).toMatchObject({ status: 'unreadable', step: 1, next_action: 'start_over' });
    expect(ds.error).toMatch(/^blank\.jsonl: /);
  });

  it('refuses duplicate ids across the files of a dataset', async () => {
    const h = await start();
    const ds = await readDataset(h, [
      { name: 'a.csv', content: 'id,text\nsame,one\nother,two\n' },
      { name: 'b.jsonl', content: '{"id":"same","text":"three"}\n' },
    ]);
    expect(ds).toMatchObject({ status: 'unreadable', step: 1, next_action: 'start_over' });
    expect(ds.error).toMatch(/^(a\.csv|b\.jsonl): /);
  });

  it('the unreadable knob makes any dataset unreadable, naming the first file', async () => {
    const h = await start({ unreadable: true });
    const ds = await readDataset(h, [
      { name: 'first.csv', content: 'text\nfine\n' },
      { name: 'second.csv', content: 'text\nfine too\n' },
    ]);
    expect(ds).toMatchObject({
      status: 'unreadable',
      step: 1,
      next_action: 'start_over',
      error: 'first.csv: unreadable (simulated)',
    });
  });

  it('an unreadable dataset refuses suggest, structure and labels with 409 conflict', async () => {
    const h = await start();
    const ds = await readDataset(h, [{ name: 'notes.txt', content: 'x\n' }]);
    expect(ds.next_action).toBe('start_over');
    expectError(await api(h, 'POST', `/v1/datasets/${ds.id}/suggest`), 409, 'conflict');
    expectError(await api(h, 'POST', `/v1/datasets/${ds.id}/structure`, { body: {} }), 409, 'conflict');
    expectError(await api(h, 'GET', `/v1/datasets/${ds.id}/labels/next`), 409, 'conflict');
  });
});

describe('masking', () => {
  it('replaces e-mail addresses, phone numbers and URLs in example.text', async () => {
    const h = await start({ heldOutCount: 11 });
    const rows: [string, string, string][] = [
      ['m1', 'Mail me at jane.doe@example.com please', 'Mail me at [EMAIL] please'],
      ['m2', 'Call +1 415-555-0100 today', 'Call [PHONE] today'],
      ['m3', 'Office (020) 7946 0958 is open', 'Office [PHONE] is open'],
      ['m4', 'Ring 555 123 4567 now', 'Ring [PHONE] now'],
      ['m5', 'See https://example.com/page?x=1 for more', 'See [URL] for more'],
      ['m6', 'Plain text stays as it is', 'Plain text stays as it is'],
      ['m7', 'Write to first.last+tag@sub.example.co.uk today', 'Write to [EMAIL] today'],
      ['m8', 'Link http://shop.example.org/item/42 here', 'Link [URL] here'],
      ['m9', 'Paid 25 dollars on 2023-01-15 for 3 items', 'Paid 25 dollars on 2023-01-15 for 3 items'],
      ['n1', 'Left my number (+49 30 901820) twice', 'Left my number ([PHONE]) twice'],
    ];
    const csv = ['id,text', ...rows.map(([id, text]) => `${id},"${text}"`)].join('\n');
    const examples = await examplesOf(h, [{ name: 'pii.csv', content: csv }]);
    expect(examples).toEqual(rows.map(([id, , masked]) => ({ id, text: masked })));
  });
});
