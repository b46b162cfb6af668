/**
 * Properties of train.json validation (lambdas/drop/train-json.ts), over generated inputs: a
 * valid file parses to what it says, anything else is refused as invalid_train_json naming the
 * field, and no input whatever makes the parser fail any other way.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS_LIMIT, parseTrainJson, TRAIN_JSON_FIELDS } from '../../lambdas/drop/train-json.js';
import { MAX_DATASET_NAME_LENGTH as MAX_NAME_LENGTH } from '../../lambdas/service-client/contract.js';
import { isPlainFileName } from '../../lambdas/drop/file-names.js';
import { RunError } from '../../lambdas/core/errors/index.js';

/** The RunError parseTrainJson throws for `text`, or undefined when it accepts it. */
function refusalOf(text: string): RunError | undefined {
  try {
    parseTrainJson(text);
    return undefined;
  } catch (error) {
    if (error instanceof RunError) return error;
    throw error;
  }
}

const fileName = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
  .filter((name) => isPlainFileName(name) && name !== 'train.json');

/** Any train.json the format allows. */
const validTrainJson = fc
  .record(
    {
      name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 50 }),
      files: fc.uniqueArray(fileName, { minLength: 1, maxLength: 5 }),
      labels: fileName,
      encoder: fc.string({ minLength: 1, maxLength: 20 }),
      decisions: fc.oneof(
        fc.constantFrom('service', 'suggested'),
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 10 }),
          fc.string({ minLength: 1, maxLength: 10 }),
          {
            maxKeys: 3,
          },
        ),
      ),
      maxAttempts: fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT }),
      resume: fc.boolean(),
    },
    { requiredKeys: [] },
  )
  .filter((value) => value.labels === undefined || value.files?.includes(value.labels) !== true);

describe('train.json validation (properties)', () => {
  it('accepts every valid train.json and returns its fields unchanged, BOM and white space around or not', () => {
    fc.assert(
      fc.property(validTrainJson, fc.boolean(), fc.constantFrom('', ' ', '\n\t'), (value, bom, space) => {
        const text = `${bom ? '\uFEFF' : ''}${space}${JSON.stringify(value, null, space === '' ? 0 : 2)}${space}`;
        expect(parseTrainJson(text)).toEqual(value);
      }),
    );
  });

  it('refuses any unknown field by name, whatever else the file holds', () => {
    const unknownField = fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((field) => !(TRAIN_JSON_FIELDS as readonly string[]).includes(field) && field !== '__proto__');
    fc.assert(
      fc.property(validTrainJson, unknownField, fc.jsonValue(), (value, field, extra) => {
        const error = refusalOf(JSON.stringify({ ...value, [field]: extra }));
        expect(error?.code).toBe('invalid_train_json');
        expect(error?.detail).toContain(`unknown field ${JSON.stringify(field)}`);
      }),
    );
  });

  it('refuses any maxAttempts but an integer from 1 to 10, naming the field', () => {
    const outOfRange = fc.oneof(
      fc.integer({ max: 0 }),
      fc.integer({ min: MAX_ATTEMPTS_LIMIT + 1 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.integer(), { maxLength: 2 }),
    );
    fc.assert(
      fc.property(outOfRange, (maxAttempts) => {
        const error = refusalOf(JSON.stringify({ maxAttempts }));
        expect(error?.code).toBe('invalid_train_json');
        expect(error?.detail).toContain('"maxAttempts" must be an integer from 1 to 10');
      }),
    );
  });

  it('refuses a name that is not a string of 1 to 200 characters, naming the field', () => {
    const badName = fc.oneof(
      fc.constant(''),
      fc.string({ minLength: MAX_NAME_LENGTH + 1, maxLength: MAX_NAME_LENGTH + 50 }),
      // Over the limit in UTF-16 units (the service's count), under it in characters.
      fc.string({
        unit: fc.constantFrom('😀', '𝄞'),
        minLength: MAX_NAME_LENGTH / 2 + 1,
        maxLength: MAX_NAME_LENGTH,
      }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
    );
    fc.assert(
      fc.property(badName, (name) => {
        const error = refusalOf(JSON.stringify({ name }));
        expect(error?.code).toBe('invalid_train_json');
        expect(error?.detail).toContain('"name" must be');
      }),
    );
  });

  it('refuses any JSON that is not an object', () => {
    const notAnObject = fc
      .jsonValue()
      .filter((value) => typeof value !== 'object' || value === null || Array.isArray(value));
    fc.assert(
      fc.property(notAnObject, (value) => {
        expect(refusalOf(JSON.stringify(value))?.code).toBe('invalid_train_json');
      }),
    );
  });

  it('never fails any other way than invalid_train_json, whatever the text', () => {
    const anyText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.json({ maxDepth: 4 }),
      fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify({ decisions: value, files: value })),
      // Nesting around the depth limit (16), built without recursion.
      fc.integer({ min: 1, max: 40 }).map((depth) => `${'{"decisions":'.repeat(depth)}1${'}'.repeat(depth)}`),
    );
    fc.assert(
      fc.property(anyText, (text) => {
        const error = refusalOf(text);
        if (error !== undefined) {
          expect(error.code).toBe('invalid_train_json');
          expect(error.detail.length).toBeGreaterThan(0);
        }
      }),
    );
  });
});
