/**
 * The corpus cases that the drop alone decides, through ValidateDrop's domain function against
 * the real local S3: each is accepted, or refused with its code and a message naming what is wrong.
 */
import { describe, expect, it } from 'vitest';
import { RunError } from '../../../lambdas/core/errors/index.js';
import { validateDropStep } from '../../../lambdas/steps/validate-drop.js';
import { stepEnv, usePipelineFixtures } from '../../helpers/pipeline.js';
import { CASES } from './cases.js';
import { uniqueDrop } from '../../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

async function validateDrop(files: Readonly<Record<string, string | Buffer>>): Promise<unknown> {
  const state = await fixtures.dropped(files, uniqueDrop('corpus'));
  return validateDropStep.run(state, stepEnv(fixtures.s3Runtime()));
}

it('the corpus holds at least 40 cases', () => {
  expect(CASES.length).toBeGreaterThanOrEqual(40);
  expect(new Set(CASES.map((entry) => entry.name)).size).toBe(CASES.length);
});

describe('bad-input corpus: what ValidateDrop decides from the drop alone', () => {
  it.each(CASES.filter((entry) => entry.through === 'validate'))(
    '$name',
    async ({ files, expect: expected }) => {
      const outcome = await validateDrop(files).then(
        (config) => ({ config }),
        (error: unknown) => ({ error }),
      );
      if (expected.trains === true) {
        expect(outcome).toHaveProperty('config');
        return;
      }
      if (!('error' in outcome) || !(outcome.error instanceof RunError)) {
        throw new Error(`expected ${expected.code}, got ${JSON.stringify(outcome)}`);
      }
      expect(outcome.error.code).toBe(expected.code);
      for (const text of expected.mentions) expect(outcome.error.detail).toContain(text);
    },
  );
});
