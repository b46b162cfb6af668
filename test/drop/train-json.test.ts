import { describe, expect, it } from 'vitest';
import { closestField, parseTrainJson } from '../../lambdas/drop/train-json.js';
import { RunError } from '../../lambdas/core/errors/index.js';

/** The RunError parseTrainJson throws for this text or these bytes. */
function refusal(file: string | Buffer): RunError {
  try {
    parseTrainJson(file);
  } catch (error) {
    if (error instanceof RunError) return error;
    throw error;
  }
  throw new Error(`train.json was accepted: ${file.toString()}`);
}

function problemsOf(value: unknown): string {
  const error = refusal(JSON.stringify(value));
  expect(error.code).toBe('invalid_train_json');
  return error.detail;
}

describe('train.json', () => {
  it('accepts {} (every field optional)', () => {
    expect(parseTrainJson('{}')).toEqual({});
    expect(parseTrainJson('  {}\n')).toEqual({});
  });

  it('accepts every field at a valid value', () => {
    const full = {
      name: 'product reviews',
      files: ['reviews.csv', 'more reviews.jsonl'],
      labels: 'answers.csv',
      encoder: 'enc-base',
      decisions: { dedupe: 'yes', language: 'en' },
      maxAttempts: 10,
    };
    expect(parseTrainJson(JSON.stringify(full))).toEqual(full);
    expect(parseTrainJson('{"decisions": "service", "maxAttempts": 1}')).toEqual({
      decisions: 'service',
      maxAttempts: 1,
    });
    expect(parseTrainJson('{"decisions": "suggested"}')).toEqual({ decisions: 'suggested' });
    // No overrides: ask for suggestions and take them all.
    expect(parseTrainJson('{"decisions": {}}')).toEqual({ decisions: {} });
  });

  it('keeps a question id that is also an object key of JavaScript\'s own ("__proto__")', () => {
    // Found by the property test (seed 2117102748): assigning it set the prototype instead.
    const parsed = parseTrainJson('{"decisions": {"__proto__": "yes", "constructor": "no"}}');
    expect(Object.entries(parsed.decisions as object)).toEqual([
      ['__proto__', 'yes'],
      ['constructor', 'no'],
    ]);
  });

  it('tolerates a byte order mark', () => {
    expect(parseTrainJson('\uFEFF{"maxAttempts": 2}')).toEqual({ maxAttempts: 2 });
  });

  it('says so when the file is empty, not JSON, or not an object', () => {
    expect(refusal('').detail).toBe(
      'train.json is empty: write {} to use every default, or an object such as {"maxAttempts": 2}',
    );
    expect(refusal(' \n').code).toBe('invalid_train_json');
    const broken = refusal('{"name": "a",}');
    expect(broken.code).toBe('invalid_train_json');
    expect(broken.detail).toMatch(/^train\.json is not valid JSON \(.+\): write an object such as \{\}/);
    expect(refusal('[]').detail).toBe(
      'train.json must hold a JSON object such as {} or {"name": "reviews"} (got an array)',
    );
    expect(refusal('null').detail).toContain('(got null)');
    expect(refusal('"hello"').detail).toContain('(got a string: "hello")');
    expect(refusal('3').detail).toContain('(got a number: 3)');
  });

  it('names the field, what was given and what is allowed', () => {
    expect(problemsOf({ maxAttempts: '3' })).toBe(
      'train.json: "maxAttempts" must be an integer from 1 to 10 (got "3")',
    );
    for (const bad of [0, 11, 2.5, -1, 1e300, null, true]) {
      expect(problemsOf({ maxAttempts: bad })).toBe(
        `train.json: "maxAttempts" must be an integer from 1 to 10 (got ${JSON.stringify(bad)})`,
      );
    }
    expect(problemsOf({ name: '' })).toBe(
      'train.json: "name" must be a string of 1 to 200 characters, as the service counts them (an emoji counts 2) (got "")',
    );
    expect(problemsOf({ name: 42 })).toBe(
      'train.json: "name" must be a string of 1 to 200 characters, as the service counts them (an emoji counts 2) (got 42)',
    );
    expect(problemsOf({ name: 'x'.repeat(201) })).toMatch(
      /^train\.json: "name" must be a string of 1 to 200 characters, as the service counts them \(an emoji counts 2\) \(got "x{56}\.\.\.\)$/,
    );
    expect(parseTrainJson(JSON.stringify({ name: 'x'.repeat(200) })).name).toHaveLength(200);
    expect(problemsOf({ encoder: '' })).toMatch(
      /^train\.json: "encoder" must be a non-empty string .*\(got ""\)$/,
    );
    expect(problemsOf({ encoder: ['enc'] })).toContain('"encoder" must be a non-empty string');
  });

  it('checks "files": a non-empty list of unique plain file names, at most 1000', () => {
    const list = 'a non-empty list of at most 1000 file names';
    expect(problemsOf({ files: 'reviews.csv' })).toBe(
      `train.json: "files" must be ${list} (got "reviews.csv")`,
    );
    expect(problemsOf({ files: [] })).toBe(`train.json: "files" must be ${list} (got [])`);
    const many = Array.from({ length: 1001 }, (_, index) => `f${String(index)}.csv`);
    expect(problemsOf({ files: many })).toContain(`"files" must be ${list}`);
    expect(parseTrainJson(JSON.stringify({ files: many.slice(0, 1000) })).files).toHaveLength(1000);

    const plain =
      'a plain file name (1 to 255 characters, no "/", "\\", ".." or control characters such as a tab or a newline)';
    expect(problemsOf({ files: ['ok.csv', 'data/reviews.csv', 7, '..', 'a\\b.csv', '', '.'] })).toBe(
      [
        `train.json: "files[1]" must be ${plain} (got "data/reviews.csv")`,
        `"files[2]" must be ${plain} (got 7)`,
        `"files[3]" must be ${plain} (got "..")`,
        `"files[4]" must be ${plain} (got "a\\\\b.csv")`,
        `"files[5]" must be ${plain} (got "")`,
        `"files[6]" must be ${plain} (got ".")`,
      ].join('; '),
    );
    expect(problemsOf({ files: ['tab\there.csv', 'new\nline.csv', 'a..b.csv', 'nul\u0000.csv'] })).toBe(
      [
        `train.json: "files[0]" must be ${plain} (got "tab\\there.csv")`,
        `"files[1]" must be ${plain} (got "new\\nline.csv")`,
        `"files[2]" must be ${plain} (got "a..b.csv")`,
        `"files[3]" must be ${plain} (got "nul\\u0000.csv")`,
      ].join('; '),
    );
    expect(parseTrainJson(JSON.stringify({ files: ['résumé 2026.csv', 'a.b.c.csv'] })).files).toEqual([
      'résumé 2026.csv',
      'a.b.c.csv',
    ]);
    expect(problemsOf({ files: ['x'.repeat(256)] })).toContain(`"files[0]" must be ${plain}`);
    expect(parseTrainJson(JSON.stringify({ files: ['x'.repeat(255)] })).files).toEqual(['x'.repeat(255)]);
    expect(problemsOf({ files: ['a.csv', 'b.csv', 'a.csv'] })).toBe(
      'train.json: "files[2]" must be a name not listed before in "files" (got "a.csv")',
    );
  });

  it('takes "resume" as true or false only', () => {
    expect(parseTrainJson('{"resume": true}')).toEqual({ resume: true });
    expect(parseTrainJson('{"resume": false}')).toEqual({ resume: false });
    for (const bad of ['yes', 1, null]) {
      expect(problemsOf({ resume: bad })).toBe(
        `train.json: "resume" must be true or false (got ${JSON.stringify(bad)})`,
      );
    }
  });

  it('checks "labels" as a plain file name that is not also a data file', () => {
    expect(problemsOf({ labels: 'sub/labels.csv' })).toContain('"labels" must be a plain file name');
    expect(problemsOf({ labels: 'both.csv', files: ['both.csv', 'data.csv'] })).toBe(
      'train.json: "labels" names "both.csv", which "files" also lists: a file is either data or labels, remove it from one of them',
    );
    expect(problemsOf({ labels: 'train.json' })).toContain('"labels" must not be "train.json"');
    expect(problemsOf({ files: ['train.json'] })).toContain('"files" must not list "train.json"');
  });

  it('checks "decisions": "service", "suggested" or question id -> non-empty answer', () => {
    const allowed = '"service", "suggested" or an object of question id -> answer';
    expect(problemsOf({ decisions: 'sugested' })).toBe(
      `train.json: "decisions" must be ${allowed} (got "sugested")`,
    );
    expect(problemsOf({ decisions: ['service'] })).toBe(
      `train.json: "decisions" must be ${allowed} (got ["service"])`,
    );
    expect(problemsOf({ decisions: null })).toContain(`"decisions" must be ${allowed} (got null)`);
    expect(problemsOf({ decisions: { dedupe: '', language: 1, ok: 'yes' } })).toBe(
      'train.json: "decisions.dedupe" must be a non-empty string (an answer of that question) (got ""); ' +
        '"decisions.language" must be a non-empty string (an answer of that question) (got 1)',
    );
    expect(problemsOf({ decisions: { '': 'yes' } })).toBe(
      'train.json: "decisions" must be an object whose question ids are non-empty (got {"":"yes"})',
    );
  });

  it('refuses unknown fields and suggests the closest known one', () => {
    expect(problemsOf({ maxAttempt: 3 })).toBe(
      'train.json: unknown field "maxAttempt" (did you mean "maxAttempts"?); the fields are name, files, labels, encoder, decisions, maxAttempts, resume, encoders, promote',
    );
    expect(problemsOf({ max_attempts: 3 })).toContain('(did you mean "maxAttempts"?)');
    expect(problemsOf({ Name: 'x' })).toContain('unknown field "Name" (did you mean "name"?)');
    expect(problemsOf({ file: ['a.csv'] })).toContain('(did you mean "files"?)');
    expect(problemsOf({ encoder_id: 'x' })).toContain('(did you mean "encoder"?)');
    expect(problemsOf({ colour: 'blue' })).toBe(
      'train.json: unknown field "colour"; the fields are name, files, labels, encoder, decisions, maxAttempts, resume, encoders, promote',
    );
  });

  it('refuses deeply nested JSON as invalid_train_json, not a stack overflow', () => {
    const levels = 100_000;
    const deep = [
      '['.repeat(levels) + ']'.repeat(levels),
      `{"name": ${'['.repeat(levels)}${']'.repeat(levels)}}`,
      `{"decisions": ${'{"a": '.repeat(levels)}"x"${'}'.repeat(levels)}}`,
    ];
    for (const text of deep) {
      const error = refusal(text);
      expect(error.code).toBe('invalid_train_json');
      expect(error.detail).toContain('more than 16 levels deep');
    }
    // Deep but within the limit: the usual field-by-field message.
    expect(problemsOf({ name: [[[[[[[[1]]]]]]]] })).toContain('"name" must be a string');
  });

  it('reports every problem in one message', () => {
    const detail = problemsOf({ maxAttempt: 3, name: '', files: [], decisions: 'auto' });
    expect(detail.startsWith('train.json: unknown field "maxAttempt"')).toBe(true);
    expect(detail).toContain('"name" must be');
    expect(detail).toContain('"files" must be');
    expect(detail).toContain('"decisions" must be');
    expect(detail.split('; ').length).toBeGreaterThanOrEqual(4);
  });

  it('caps a very long list of problems', () => {
    const detail = problemsOf({
      files: Array.from({ length: 30 }, (_, index) => `bad/${String(index)}.csv`),
    });
    expect(detail).toContain('"files[19]"');
    expect(detail).not.toContain('"files[20]"');
    expect(detail.endsWith('; and 10 more problems')).toBe(true);
  });
});

describe("train.json's bytes, and the values its messages echo", () => {
  it('refuses bytes that are not UTF-8, naming the byte offset', () => {
    const latin1 = refusal(Buffer.from('{"name":"caf\xe9"}', 'latin1'));
    expect(latin1.code).toBe('invalid_train_json');
    expect(latin1.detail).toBe(
      'train.json is not UTF-8 text: the byte at offset 12 (0xe9) does not start a valid UTF-8 character. Save the file as UTF-8 and upload it again',
    );
    // UTF-16 with its byte order mark, as some Windows editors save it.
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"name":"x"}', 'utf16le')]);
    expect(refusal(utf16).detail).toContain('offset 0 (0xff)');
    // A character cut off at the end; and what UTF-8 does hold, a BOM and a real U+FFFD, is fine.
    expect(refusal(Buffer.from('{"name":"😀"}').subarray(0, 11)).detail).toContain('offset 9 (0xf0)');
    expect(parseTrainJson(Buffer.from('\uFEFF{"name":"caf\u00e9 \uFFFD"}'))).toEqual({ name: 'café \uFFFD' });
  });

  it('counts the name in UTF-16 code units, as the service does: an emoji is 2', () => {
    expect(problemsOf({ name: '😀'.repeat(150) })).toMatch(
      /^train\.json: "name" must be a string of 1 to 200 /,
    );
    expect(problemsOf({ name: `${'😀'.repeat(100)}x` })).toContain('"name" must be');
    expect(parseTrainJson(JSON.stringify({ name: '😀'.repeat(100) })).name).toHaveLength(200);
  });

  it('says what was written for a number too large to hold (JSON.parse reads 1e309 as Infinity)', () => {
    expect(refusal('{"maxAttempts": 1e309}').detail).toBe(
      'train.json: "maxAttempts" must be an integer from 1 to 10 (got 1e309)',
    );
    expect(refusal('{"name": "1e999", "maxAttempts": -2E+400}').detail).toBe(
      'train.json: "maxAttempts" must be an integer from 1 to 10 (got -2E+400)',
    );
    expect(refusal('{"decisions": {"a": 1e309}}').detail).toContain('"decisions.a" must be');
  });

  it('escapes control characters in every value it echoes, so none reaches a terminal raw', () => {
    // eslint-disable-next-line no-control-regex -- control characters are what must not appear
    const controls = /[\u0000-\u001f\u007f-\u009f]/;
    // UTF-16 without a byte order mark is valid UTF-8, full of NULs.
    const utf16 = refusal(Buffer.from('{"name":"x"}', 'utf16le').swap16().toString('utf8'));
    expect(utf16.detail).toContain('not valid JSON');
    expect(utf16.detail).not.toMatch(controls);
    const echoed = problemsOf({ 'colour\u0085\u0007': 1, decisions: { 'q\u009b2J': '' }, name: ['\u007f'] });
    expect(echoed).not.toMatch(controls);
    expect(echoed).toContain('unknown field "colour\\u0085\\u0007"');
    expect(echoed).toContain('"decisions.q\\u009b2J" must be');
    expect(echoed).toContain(
      '"name" must be a string of 1 to 200 characters, as the service counts them (an emoji counts 2) (got ["\\u007f"])',
    );
  });
});

describe('closestField', () => {
  it('finds typos, other spellings and partial names, and nothing for unrelated words', () => {
    expect(closestField('maxAttempt')).toBe('maxAttempts');
    expect(closestField('MAX-ATTEMPTS')).toBe('maxAttempts');
    expect(closestField('attempts')).toBe('maxAttempts');
    expect(closestField('lables')).toBe('labels');
    expect(closestField('decision')).toBe('decisions');
    expect(closestField('endcoder')).toBe('encoder');
    expect(closestField('region')).toBeUndefined();
    expect(closestField('')).toBeUndefined();
  });
});
