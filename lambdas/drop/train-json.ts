/**
 * train.json (docs/drop-format.md): parsed and checked field by field. Every field is optional
 * and `{}` is valid; defaults that need the drop folder (name, files, labels) are applied by
 * validate.ts. Every problem is reported at once, each naming the field, what was given and
 * what is allowed, so one upload of a fixed file is enough. Unknown fields are refused (a typo
 * such as "maxAttempt" would otherwise be ignored silently) with the closest known field.
 */
import * as z from 'zod';
import { messageOf, RunError } from '../core/errors/errors.js';
import type { Decisions } from '../core/state/state.js';
import { isDatasetName, MAX_DATASET_NAME_LENGTH } from '../service-client/contract.js';
import { formatPath, valueAt } from '../service-client/http.js';
import { isPlainFileName, PLAIN_FILE_NAME_RULE } from './file-names.js';
import { decodeUtf8, printable, quoted } from './user-text.js';

export const DEFAULT_DECISIONS: Decisions = 'service';
export const DEFAULT_MAX_ATTEMPTS = 3;
/** The service's ceiling on the files of one dataset. */
export const MAX_FILES = 1000;
export const MAX_ATTEMPTS_LIMIT = 10;
/** Encoders one train.json may list: each is a training, and a credit. */
export const MAX_ENCODERS = 10;
/** train.json is a few lines; anything this large is not one (and is not read). */
export const MAX_TRAIN_JSON_BYTES = 1024 * 1024;

/**
 * train.json's deepest value is an answer in `decisions` (depth 2). Anything far deeper is not a
 * train.json, and is refused before any code that walks values recursively (error messages,
 * the schema) could run out of stack on it.
 */
export const MAX_TRAIN_JSON_DEPTH = 16;

/** Problems listed in one error message at most; the rest are counted. */
const MAX_PROBLEMS_SHOWN = 20;

/** What each field allows, worded to follow `"<field>" must be`. */
const ALLOWED = {
  name: `a string of 1 to ${String(MAX_DATASET_NAME_LENGTH)} characters, as the service counts them (an emoji counts 2)`,
  files: `a non-empty list of at most ${String(MAX_FILES)} file names`,
  fileName: `a plain file name (${PLAIN_FILE_NAME_RULE})`,
  encoder: "a non-empty string (an encoder id of the service; leave it out for the service's default)",
  decisions: '"service", "suggested" or an object of question id -> answer',
  answer: 'a non-empty string (an answer of that question)',
  maxAttempts: `an integer from 1 to ${String(MAX_ATTEMPTS_LIMIT)}`,
  resume: 'true or false',
  encoders: `"all" or a list of 1 to ${String(MAX_ENCODERS)} different encoder ids of the service`,
  encoderId: 'a non-empty string (an encoder id of the service)',
  promote: 'an object such as {"metric": "f1", "min_delta": 0}, with no other fields',
  metric: 'a non-empty string (a metric the service reports, such as "f1")',
  minDelta: 'a number, 0 or more (how much the new model must beat the current one by)',
} as const;

const fileName = z.string({ error: ALLOWED.fileName }).refine(isPlainFileName, { error: ALLOWED.fileName });

const encoders = { error: ALLOWED.encoders };
const datasetName = { error: ALLOWED.name };
const files = { error: ALLOWED.files };
const attempts = { error: ALLOWED.maxAttempts };
const encoderId = z.string({ error: ALLOWED.encoderId }).min(1, { error: ALLOWED.encoderId });

const decisions = z.unknown().transform((value, ctx): Decisions => {
  if (value === 'service' || value === 'suggested') return value;
  if (!isPlainObject(value)) {
    ctx.addIssue({ code: 'custom', message: ALLOWED.decisions });
    return z.NEVER;
  }
  // Entries, not assignment: a question id "__proto__" would set the prototype and be lost.
  const answers: [string, string][] = [];
  for (const [question, answer] of Object.entries(value)) {
    if (question === '') {
      ctx.addIssue({ code: 'custom', message: 'an object whose question ids are non-empty' });
    } else if (typeof answer !== 'string' || answer === '') {
      ctx.addIssue({ code: 'custom', message: ALLOWED.answer, path: [question] });
    } else {
      answers.push([question, answer]);
    }
  }
  return Object.fromEntries(answers);
});

const TrainJsonSchema = z.object({
  // The service's count (UTF-16 units); zod's max() would count code points.
  name: z.string(datasetName).refine(isDatasetName, datasetName).optional(),
  files: z
    .array(fileName, files)
    .min(1, files)
    .max(MAX_FILES, files)
    .superRefine((names, ctx) => {
      const seen = new Set<string>();
      names.forEach((name, index) => {
        if (seen.has(name)) {
          ctx.addIssue({ code: 'custom', message: 'a name not listed before in "files"', path: [index] });
        }
        seen.add(name);
      });
    })
    .optional(),
  labels: fileName.optional(),
  encoder: z.string({ error: ALLOWED.encoder }).min(1, { error: ALLOWED.encoder }).optional(),
  decisions: decisions.optional(),
  maxAttempts: z.int(attempts).min(1, attempts).max(MAX_ATTEMPTS_LIMIT, attempts).optional(),
  resume: z.boolean({ error: ALLOWED.resume }).optional(),
  encoders: z
    .union([z.literal('all'), z.array(encoderId).min(1, encoders).max(MAX_ENCODERS, encoders)], encoders)
    .refine((ids) => ids === 'all' || new Set(ids).size === ids.length, encoders)
    .optional(),
  promote: z
    .strictObject(
      {
        metric: z.string({ error: ALLOWED.metric }).min(1, { error: ALLOWED.metric }),
        min_delta: z.number({ error: ALLOWED.minDelta }).min(0, { error: ALLOWED.minDelta }).default(0),
      },
      { error: ALLOWED.promote },
    )
    .optional(),
});

/**
 * train.json as the user wrote it, checked; fields left out are undefined. `resume`: resume the
 * drop's latest failed run from its dataset at the service instead of starting over (no upload,
 * structuring or labelling: lambdas/ownership/resume.ts); `encoders`: several encoders, one model
 * each from the one dataset (a sweep), or every one on offer; `promote`: when a new model replaces
 * the drop's current one (lambdas/steps/lineage.ts).
 */
export type TrainJson = z.infer<typeof TrainJsonSchema>;

export const TRAIN_JSON_FIELDS = Object.keys(TrainJsonSchema.shape) as readonly (keyof TrainJson)[];

/**
 * Parses and checks train.json: its bytes (which must be UTF-8), or its text.
 * @throws RunError invalid_train_json listing every problem
 */
export function parseTrainJson(file: Uint8Array | string): TrainJson {
  const text = typeof file === 'string' ? file : decodeUtf8(file, 'train.json', 'invalid_train_json');
  // Editors on Windows may save a byte order mark; it is not part of the JSON.
  const source = text.replace(/^\uFEFF/, '');
  if (source.trim() === '') {
    throw invalid(
      'train.json is empty: write {} to use every default, or an object such as {"maxAttempts": 2}',
    );
  }
  let value: unknown;
  try {
    value = parseJson(source);
  } catch (error) {
    const reason = printable(messageOf(error));
    throw invalid(
      `train.json is not valid JSON (${reason}): write an object such as {} or {"name": "reviews"}`,
    );
  }
  if (exceedsDepth(value, MAX_TRAIN_JSON_DEPTH)) {
    throw invalid(
      `train.json nests objects or lists more than ${String(MAX_TRAIN_JSON_DEPTH)} levels deep; its fields are at most two levels deep, as in {"decisions": {"<question id>": "<answer>"}}`,
    );
  }
  if (!isPlainObject(value)) {
    throw invalid(
      `train.json must hold a JSON object such as {} or {"name": "reviews"} (got ${kindOf(value)})`,
    );
  }

  const problems = Object.keys(value)
    .filter((field) => !(TRAIN_JSON_FIELDS as readonly string[]).includes(field))
    .map(unknownFieldProblem);
  const parsed = TrainJsonSchema.safeParse(value);
  if (!parsed.success) problems.push(...issueProblems(parsed.error.issues, value));
  if (parsed.success) problems.push(...crossFieldProblems(parsed.data));
  if (problems.length > 0 || !parsed.success) throw invalid(`train.json: ${joinProblems(problems)}`);
  return parsed.data;
}

/** Rules between fields: the labels file is not data, and train.json is neither. */
function crossFieldProblems(config: TrainJson): string[] {
  const problems: string[] = [];
  if (config.encoder !== undefined && config.encoders !== undefined) {
    problems.push(
      '"encoder" and "encoders" are both given: name one encoder in "encoder", or several in "encoders"',
    );
  }
  if (config.files?.includes('train.json') === true) {
    problems.push('"files" must not list "train.json": it configures the run and is not sent');
  }
  if (config.labels === 'train.json') {
    problems.push('"labels" must not be "train.json": name the CSV file holding the labels');
  }
  if (config.labels !== undefined && config.files?.includes(config.labels) === true) {
    problems.push(
      `"labels" names ${quoted(config.labels)}, which "files" also lists: a file is either data or labels, remove it from one of them`,
    );
  }
  return problems;
}

function unknownFieldProblem(field: string): string {
  const closest = closestField(field);
  const hint = closest === undefined ? '' : ` (did you mean "${closest}"?)`;
  return `unknown field ${quoted(field)}${hint}; the fields are ${TRAIN_JSON_FIELDS.join(', ')}`;
}

/** One problem per offending path (zod may report several issues for one value). */
function issueProblems(issues: z.ZodError['issues'], root: Record<string, unknown>): string[] {
  const byPath = new Map<string, string>();
  for (const issue of issues) {
    // Unknown fields of train.json itself are named by unknownFieldProblem.
    if (issue.code === 'unrecognized_keys' && issue.path.length === 0) continue;
    const label = formatPath(issue.path);
    if (byPath.has(label)) continue;
    byPath.set(
      label,
      `"${printable(label)}" must be ${issue.message} (got ${describeValue(valueAt(root, issue.path))})`,
    );
  }
  return [...byPath.values()];
}

/** The given value as JSON, cut short: enough to recognise it. */
function describeValue(value: unknown): string {
  const text = value instanceof OutOfRange ? value.written : value === undefined ? 'nothing' : quoted(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${value instanceof OutOfRange ? 'number' : typeof value}: ${describeValue(value)}`;
}

function joinProblems(problems: readonly string[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS_SHOWN);
  const more = problems.length - shown.length;
  return more > 0 ? `${shown.join('; ')}; and ${String(more)} more problems` : shown.join('; ');
}

/**
 * The known field a typo most likely meant: the same letters ignoring case, `_` and `-`; one
 * containing the other (`attempts` -> `maxAttempts`); or within two edits.
 */
export function closestField(field: string): string | undefined {
  const wanted = squash(field);
  if (wanted === '') return undefined;
  let best: { field: string; distance: number } | undefined;
  for (const known of TRAIN_JSON_FIELDS) {
    const candidate = squash(known);
    const distance =
      candidate === wanted
        ? 0
        : wanted.length >= 4 && (candidate.includes(wanted) || wanted.includes(candidate))
          ? 1
          : editDistance(wanted, candidate);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { field: known, distance };
  }
  return best?.field;
}

function squash(text: string): string {
  return text.toLowerCase().replace(/[\s_-]/g, '');
}

/** Levenshtein distance; the words are field names, so O(a x b) is nothing. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** Whether `value` nests deeper than `limit` levels; iterative, so no depth can overflow the stack. */
function exceedsDepth(value: unknown, limit: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next.value !== 'object' || next.value === null) continue;
    if (next.depth >= limit) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth: next.depth + 1 });
  }
  return false;
}

/** A number written beyond a double's range (1e309), which JSON.parse reads as Infinity. */
class OutOfRange {
  constructor(readonly written: string) {}
}

/**
 * JSON.parse, with each number out of range kept as written (an OutOfRange) so a message can say
 * what the user wrote. The file is valid JSON, so its numbers and strings are found in order by
 * one pattern (strings matched whole, so digits inside them are not taken for numbers).
 */
function parseJson(source: string): unknown {
  const outOfRange = (source.match(/"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*/g) ?? []).filter(
    (token) => !token.startsWith('"') && !Number.isFinite(Number(token)),
  );
  const value: unknown = JSON.parse(source);
  // A reviver recurses: only for a file that needs one, and is no deeper than a train.json.
  if (outOfRange.length === 0 || exceedsDepth(value, MAX_TRAIN_JSON_DEPTH)) return value;
  return JSON.parse(source, (_key, parsed: unknown) =>
    typeof parsed === 'number' && !Number.isFinite(parsed)
      ? new OutOfRange(outOfRange.shift() ?? String(parsed))
      : parsed,
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof OutOfRange)
  );
}

function invalid(detail: string): RunError {
  return new RunError('invalid_train_json', detail);
}
