/**
 * The bad-input corpus (issue 9): drops a user might really upload, each with what Hopper must
 * do with it. Every case either trains, or fails before a credit is spent with a stable code and
 * a message naming the field or file at fault. Add a case with every bug found in input handling.
 *
 * `through` says where a case is checked:
 * - 'validate': ValidateDrop's domain function against the real local S3 (validate.test.ts): what
 *   can be known from the drop alone, before the service is called at all;
 * - 'run': a whole run in local mode (runs.test.ts): what only the service's answers reveal (the
 *   held-out examples, its questions and encoders, what it can read). All of these end before
 *   StartTraining spends anything, except the cases that train.
 */

export type Expectation =
  | { readonly trains: true }
  | {
      readonly trains?: false;
      /** The run's error code (status.json and the execution's error). */
      readonly code: string;
      /** Texts the message must contain: the field, file, row or value at fault. */
      readonly mentions: readonly string[];
    };

export interface BadInputCase {
  readonly name: string;
  readonly through: 'validate' | 'run';
  /** The drop: file name -> content; train.json is put last. */
  readonly files: Readonly<Record<string, string | Buffer>>;
  readonly expect: Expectation;
}

const TRAINS = { trains: true } as const;

/** A data file with ids: held-out examples are its first rows (r1, r2, ...). */
export const DATA = [
  'id,text',
  'r1,The desk lamp arrived early and the quality is excellent.',
  'r2,"The rain jacket is loud, and the handle came loose."',
  'r3,It is a phone case. Does the job.',
  'r4,The yoga mat matches the description.',
].join('\n');
export const LABELS = ['id,label', 'r1,positive', 'r2,negative', 'r3,neutral', 'r4,neutral'].join('\n');

/** A drop that trains, with `changes` applied (a value of undefined removes the file). */
function drop(
  changes: Readonly<Record<string, string | Buffer | undefined>> = {},
): Record<string, string | Buffer> {
  const files: Record<string, string | Buffer | undefined> = {
    'reviews.csv': DATA,
    'labels.csv': LABELS,
    'train.json': '{}',
    ...changes,
  };
  return Object.fromEntries(
    Object.entries(files).filter((entry): entry is [string, string | Buffer] => entry[1] !== undefined),
  );
}

const trainJson = (value: unknown): string => JSON.stringify(value);

function fails(code: string, ...mentions: string[]): Expectation {
  return { code, mentions };
}

function nested(depth: number): unknown {
  let value: unknown = 'x';
  for (let level = 0; level < depth; level++) value = { decisions: value };
  return value;
}

const TRAIN_JSON_CASES: readonly BadInputCase[] = [
  { name: 'train.json {} (every default)', files: drop(), expect: TRAINS },
  {
    name: 'train.json with a byte order mark',
    files: drop({ 'train.json': '\uFEFF{"maxAttempts": 2}' }),
    expect: TRAINS,
  },
  {
    name: 'train.json empty',
    files: drop({ 'train.json': '' }),
    expect: fails('invalid_train_json', 'train.json is empty'),
  },
  {
    name: 'train.json not JSON (a trailing comma)',
    files: drop({ 'train.json': '{"name": "reviews",}' }),
    expect: fails('invalid_train_json', 'not valid JSON'),
  },
  {
    name: 'train.json a list',
    files: drop({ 'train.json': '["reviews.csv"]' }),
    expect: fails('invalid_train_json', 'JSON object', 'an array'),
  },
  {
    name: 'train.json null',
    files: drop({ 'train.json': 'null' }),
    expect: fails('invalid_train_json', 'got null'),
  },
  {
    name: 'name a number',
    files: drop({ 'train.json': trainJson({ name: 5 }) }),
    expect: fails('invalid_train_json', '"name" must be', 'got 5'),
  },
  {
    name: 'name of 201 characters',
    files: drop({ 'train.json': trainJson({ name: 'n'.repeat(201) }) }),
    expect: fails('invalid_train_json', '"name" must be', '1 to 200'),
  },
  {
    name: 'files a string, not a list',
    files: drop({ 'train.json': trainJson({ files: 'reviews.csv' }) }),
    expect: fails('invalid_train_json', '"files" must be', '"reviews.csv"'),
  },
  {
    name: 'files an empty list',
    files: drop({ 'train.json': trainJson({ files: [] }) }),
    expect: fails('invalid_train_json', '"files" must be a non-empty list'),
  },
  {
    name: 'files listing a name twice',
    files: drop({ 'train.json': trainJson({ files: ['reviews.csv', 'reviews.csv'] }) }),
    expect: fails('invalid_train_json', '"files[1]"', 'not listed before'),
  },
  {
    name: 'files with a path (../)',
    files: drop({ 'train.json': trainJson({ files: ['../other/reviews.csv'] }) }),
    expect: fails('invalid_train_json', '"files[0]"', 'plain file name'),
  },
  {
    name: 'files listing train.json',
    files: drop({ 'train.json': trainJson({ files: ['reviews.csv', 'train.json'] }) }),
    expect: fails('invalid_train_json', '"files" must not list "train.json"'),
  },
  {
    name: 'labels also listed in files',
    files: drop({ 'train.json': trainJson({ files: ['reviews.csv', 'labels.csv'], labels: 'labels.csv' }) }),
    expect: fails('invalid_train_json', '"labels" names "labels.csv"', '"files" also lists'),
  },
  {
    name: 'files naming a file not in the folder',
    files: drop({ 'train.json': trainJson({ files: ['reviews.csv', 'Reviews2.csv'] }) }),
    expect: fails('missing_file', '"files" names "Reviews2.csv"', 'case-sensitive'),
  },
  {
    name: 'labels naming a file not in the folder',
    files: drop({ 'train.json': trainJson({ labels: 'answers.csv' }) }),
    expect: fails('missing_file', '"labels" names "answers.csv"'),
  },
  {
    name: 'maxAttempts a string',
    files: drop({ 'train.json': trainJson({ maxAttempts: '3' }) }),
    expect: fails('invalid_train_json', '"maxAttempts" must be an integer from 1 to 10', 'got "3"'),
  },
  {
    name: 'maxAttempts 0',
    files: drop({ 'train.json': trainJson({ maxAttempts: 0 }) }),
    expect: fails('invalid_train_json', '"maxAttempts" must be an integer from 1 to 10', 'got 0'),
  },
  {
    name: 'maxAttempts 11',
    files: drop({ 'train.json': trainJson({ maxAttempts: 11 }) }),
    expect: fails('invalid_train_json', '"maxAttempts"', 'got 11'),
  },
  {
    name: 'maxAttempts 2.5',
    files: drop({ 'train.json': trainJson({ maxAttempts: 2.5 }) }),
    expect: fails('invalid_train_json', '"maxAttempts"', 'got 2.5'),
  },
  {
    name: 'encoder an empty string',
    files: drop({ 'train.json': trainJson({ encoder: '' }) }),
    expect: fails('invalid_train_json', '"encoder" must be a non-empty string'),
  },
  {
    name: 'decisions a number',
    files: drop({ 'train.json': trainJson({ decisions: 5 }) }),
    expect: fails('invalid_train_json', '"decisions" must be', '"service", "suggested"'),
  },
  {
    name: 'decisions with an empty answer',
    files: drop({ 'train.json': trainJson({ decisions: { dedupe: '' } }) }),
    expect: fails('invalid_train_json', '"decisions.dedupe"'),
  },
  {
    name: 'resume a string',
    files: drop({ 'train.json': trainJson({ resume: 'yes' }) }),
    expect: fails('invalid_train_json', '"resume" must be true or false'),
  },
  {
    name: 'unknown field (a typo)',
    files: drop({ 'train.json': trainJson({ maxAttempt: 2 }) }),
    expect: fails('invalid_train_json', 'unknown field "maxAttempt"', 'did you mean "maxAttempts"'),
  },
  {
    name: 'several problems at once, each named',
    files: drop({ 'train.json': trainJson({ name: '', maxAttempts: -1, colour: 'red' }) }),
    expect: fails('invalid_train_json', '"name"', '"maxAttempts"', 'unknown field "colour"'),
  },
  {
    name: 'train.json over 1 MiB',
    files: drop({ 'train.json': `{"name": "${'x'.repeat(1024 * 1024)}"}` }),
    expect: fails('invalid_train_json', 'train.json is', 'bytes'),
  },
  {
    name: 'train.json not UTF-8 (Latin-1)',
    files: drop({ 'train.json': Buffer.from('{"name":"caf\xe9"}', 'latin1') }),
    expect: fails('invalid_train_json', 'not UTF-8', 'offset 12 (0xe9)'),
  },
  {
    name: 'train.json in UTF-16 with a byte order mark',
    files: drop({ 'train.json': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{}', 'utf16le')]) }),
    expect: fails('invalid_train_json', 'not UTF-8', 'offset 0 (0xff)'),
  },
  {
    name: 'name of 150 emoji (300 UTF-16 units, as the service counts)',
    files: drop({ 'train.json': trainJson({ name: '😀'.repeat(150) }) }),
    expect: fails('invalid_train_json', '"name" must be', '1 to 200'),
  },
  {
    name: 'maxAttempts 1e309 (beyond a number)',
    files: drop({ 'train.json': '{"maxAttempts": 1e309}' }),
    expect: fails('invalid_train_json', '"maxAttempts"', 'got 1e309'),
  },
  {
    name: 'train.json nested 40 levels deep',
    files: drop({ 'train.json': JSON.stringify(nested(40)) }),
    expect: fails('invalid_train_json', 'more than 16 levels deep'),
  },
].map((entry) => ({ ...entry, through: 'validate' as const }));

const FILE_CASES: readonly BadInputCase[] = [
  {
    name: 'an object in a sub-folder',
    files: drop({ 'extra/more.csv': DATA }),
    expect: fails('nested_files', '"extra/more.csv"'),
  },
  {
    name: 'a name with ".."',
    files: drop({ 'v1..final.csv': DATA }),
    expect: fails('invalid_file_name', '"v1..final.csv"', 'has ".."'),
  },
  {
    name: 'a name with a backslash',
    files: drop({ 'a\\b.csv': DATA }),
    expect: fails('invalid_file_name', '"a\\\\b.csv"', 'it has a "/" or "\\"'),
  },
  {
    name: 'a name with a tab',
    files: drop({ 'tab\there.csv': DATA }),
    expect: fails('invalid_file_name', '"tab\\there.csv"', 'control character'),
  },
  {
    name: 'a name with a newline',
    files: drop({ 'line\nbreak.csv': DATA }),
    expect: fails('invalid_file_name', '"line\\nbreak.csv"', 'control character'),
  },
  {
    // Named in "files": the service takes file names of at most 255 characters.
    name: 'a name of 256 characters',
    files: drop({ 'train.json': trainJson({ files: [`${'n'.repeat(252)}.csv`] }) }),
    expect: fails('invalid_train_json', '"files[0]" must be a plain file name (1 to 255 characters'),
  },
  {
    name: 'unicode names (accents, CJK, emoji)',
    files: drop({ 'reviews.csv': undefined, 'données-レビュー-😀.csv': DATA }),
    expect: TRAINS,
  },
  {
    // Before: a dataset was made and the file uploaded (the simulated service read it as Latin-1).
    name: 'a data file in Latin-1 (not UTF-8)',
    files: drop({ 'reviews.csv': Buffer.from(DATA.replace('excellent', 'très bien'), 'latin1') }),
    expect: fails(
      'dataset_unreadable',
      'reviews.csv is not UTF-8',
      `offset ${String(DATA.indexOf('excellent') + 2)} (0xe8)`,
    ),
  },
  {
    name: 'an empty data file',
    files: drop({ 'empty.csv': '' }),
    expect: fails('empty_file', '"empty.csv"', '0 bytes'),
  },
  {
    name: 'no data files at all',
    files: drop({ 'reviews.csv': undefined }),
    expect: fails('no_data_files', 'holds no data files', '"labels.csv"'),
  },
].map((entry) => ({ ...entry, through: 'validate' as const }));

const LABELS_HEADER_CASES: readonly BadInputCase[] = [
  {
    name: 'labels.csv empty',
    files: drop({ 'labels.csv': '' }),
    expect: fails('invalid_labels_file', 'labels.csv is empty'),
  },
  {
    name: 'labels.csv without a label column',
    files: drop({ 'labels.csv': 'id,answer\nr1,positive\n' }),
    expect: fails('invalid_labels_file', 'labels.csv', 'missing "label"', '"id", "answer"'),
  },
  {
    name: 'labels.csv without an id or text column',
    files: drop({ 'labels.csv': 'label,review\npositive,r1\n' }),
    expect: fails('invalid_labels_file', 'labels.csv', 'missing "id" or "text"'),
  },
  {
    name: 'labels.csv naming label twice',
    files: drop({ 'labels.csv': 'id,label,label\nr1,positive,negative\n' }),
    expect: fails('invalid_labels_file', 'labels.csv', 'names "label" 2 times'),
  },
  {
    name: 'labels.csv of blank lines only',
    files: drop({ 'labels.csv': '\n\n  \n' }),
    expect: fails('invalid_labels_file', 'labels.csv', 'no columns'),
  },
  {
    name: 'labels.csv not UTF-8 (Latin-1)',
    files: drop({ 'labels.csv': Buffer.from(`${LABELS}\nr5,tr\xe8s bien\n`, 'latin1') }),
    expect: fails(
      'invalid_labels_file',
      'labels.csv is not UTF-8',
      `offset ${String(LABELS.length + 6)} (0xe8)`,
    ),
  },
  {
    name: 'labels.csv with an unclosed quote below the header',
    files: drop({ 'labels.csv': `${LABELS}\nr5,"positive\nr6,negative\n` }),
    expect: fails('invalid_labels_file', 'labels.csv is not valid CSV', 'line 6', 'never closed'),
  },
  {
    name: 'labels.csv with a quote inside an unquoted cell',
    files: drop({ 'labels.csv': LABELS.replace('r3,', 'r"3,') }),
    expect: fails('invalid_labels_file', 'labels.csv is not valid CSV', 'line 4'),
  },
  {
    name: 'labels.csv with a BOM and CRLF line ends',
    files: drop({ 'labels.csv': `\uFEFF${LABELS.replaceAll('\n', '\r\n')}\r\n` }),
    expect: TRAINS,
  },
  {
    // Before: passed here, then failed label_missing at LabelExamples, the dataset made.
    name: 'labels.csv with a header and no rows',
    files: drop({ 'labels.csv': 'id,label\n\n' }),
    expect: fails('label_missing', 'labels.csv has a header and no rows', 'held-out example'),
  },
  {
    // Before: passed here, then failed label_ambiguous at LabelExamples.
    name: 'labels.csv giving an id two different labels',
    files: drop({ 'labels.csv': `${LABELS}\nr2,positive` }),
    expect: fails('label_ambiguous', 'labels.csv', '"r2"', 'row 3 says "negative"', 'row 6 says "positive"'),
  },
].map((entry) => ({ ...entry, through: 'validate' as const }));

/** What only a run shows: the held-out examples, the questions, the encoders, the service's reading. */
const RUN_CASES: readonly BadInputCase[] = [
  {
    name: 'run: unicode file name trains',
    files: drop({ 'reviews.csv': undefined, 'données-レビュー-😀.csv': DATA }),
    expect: TRAINS,
  },
  {
    name: 'run: labels.csv with a BOM, CRLF and a quoted cell holding commas and a line break',
    files: drop({
      'labels.csv': `\uFEFF${['text,label', '"The desk lamp arrived early and the quality is excellent.",positive', '"The rain jacket is loud,\r\nand the handle came loose.",negative', 'It is a phone case. Does the job.,neutral', 'The yoga mat matches the description.,neutral'].join('\r\n')}\r\n`,
    }),
    expect: TRAINS,
  },
  {
    name: 'run: duplicate ids that agree',
    files: drop({ 'labels.csv': `${LABELS}\nr1,positive\nr3,neutral` }),
    expect: TRAINS,
  },
  {
    name: 'run: a label outside the choices',
    files: drop({ 'labels.csv': LABELS.replace('r3,neutral', 'r3,meh') }),
    expect: fails('invalid_label', 'labels.csv', 'row 4', '"meh"', '"positive", "negative", "neutral"'),
  },
  {
    name: 'run: a held-out example no row matches',
    files: drop({ 'labels.csv': LABELS.replace('\nr4,neutral', '\nr9,neutral') }),
    expect: fails('label_missing', 'labels.csv', '"r4"'),
  },
  {
    name: 'run: a matching row with an empty label',
    files: drop({ 'labels.csv': LABELS.replace('r4,neutral', 'r4,') }),
    expect: fails('invalid_label', 'labels.csv', 'row 5', 'has no label'),
  },
  {
    name: 'run: labels.csv with CRLF line ends for two rows, then LF',
    files: drop({
      'labels.csv': `${LABELS.split('\n').slice(0, 2).join('\r\n')}\r\n${LABELS.split('\n').slice(2).join('\n')}`,
    }),
    expect: TRAINS,
  },
  {
    name: 'run: examples held out and no labels file',
    files: drop({ 'labels.csv': undefined }),
    expect: fails('labels_required', 'holds out', 'labels.csv'),
  },
  {
    name: 'run: decisions naming an unknown question',
    files: drop({ 'train.json': trainJson({ decisions: { dedup: 'yes' } }) }),
    expect: fails('invalid_decision', 'there is no question "dedup"', '"dedupe" (yes, no)'),
  },
  {
    name: 'run: decisions with an answer outside the choices',
    files: drop({ 'train.json': trainJson({ decisions: { language: 'fr' } }) }),
    expect: fails('invalid_decision', '"fr" is not an answer to "language"', 'en, multi'),
  },
  {
    name: 'run: suggested decisions train',
    files: drop({ 'train.json': trainJson({ decisions: 'suggested' }) }),
    expect: TRAINS,
  },
  {
    name: 'run: an unknown encoder',
    files: drop({ 'train.json': trainJson({ encoder: 'enc-huge' }) }),
    expect: fails('unknown_encoder', '"enc-huge"', '"enc-small" (default)'),
  },
  {
    name: 'run: a data file of a type the service does not read',
    files: drop({ 'notes.txt': 'just some notes' }),
    expect: fails('dataset_unreadable', 'notes.txt'),
  },
  {
    name: 'run: a data file without a text column',
    files: drop({ 'reviews.csv': DATA.replace('id,text', 'id,review') }),
    expect: fails('dataset_unreadable', 'reviews.csv', 'text'),
  },
  {
    // Left out of the default file list; before, .DS_Store was sent and the run failed dataset_unreadable.
    name: 'run: files operating systems leave in folders (.DS_Store, ._x, Thumbs.db, desktop.ini) are left out',
    files: drop({
      '.DS_Store': Buffer.from([0, 0, 0, 1, 0x42, 0x75, 0x64, 0x31, 0xff]),
      '._reviews.csv': Buffer.from([0, 5, 0x16, 7, 0xfe]),
      'Thumbs.db': Buffer.from([0xd0, 0xcf, 0x11, 0xe0]),
      'desktop.ini': '[.ShellClassInfo]\r\n',
    }),
    expect: TRAINS,
  },
].map((entry) => ({ ...entry, through: 'run' as const }));

export const CASES: readonly BadInputCase[] = [
  ...TRAIN_JSON_CASES,
  ...FILE_CASES,
  ...LABELS_HEADER_CASES,
  ...RUN_CASES,
];
