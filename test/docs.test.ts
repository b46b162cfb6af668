import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  EXECUTION_TIMEOUT_SECONDS,
  MAX_WAIT_SECONDS,
  SLOW_RUN_SECONDS,
  hoursAndMinutes,
} from '../infra/run-limits.js';
import { RUN_ERROR_CODES } from '../lambdas/core/errors/index.js';

describe('docs/errors.md', () => {
  it('documents every run error code, and no other', async () => {
    const text = await readFile(new URL('../docs/errors.md', import.meta.url), 'utf8');
    const documented = [...text.matchAll(/^\|\s*`([a-z_]+)`\s*\|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual([...RUN_ERROR_CODES].sort());
  });
});

describe('docs/deploy.md and docs/pipeline.md', () => {
  it('gives the run-time limits infra/run-limits.ts derives', async () => {
    const text = (await readFile(new URL('../docs/deploy.md', import.meta.url), 'utf8')).replace(/\s+/g, ' ');
    expect(hoursAndMinutes(MAX_WAIT_SECONDS)).toBe('336 h');
    expect(text).toContain(`A run waits at most ${hoursAndMinutes(MAX_WAIT_SECONDS)} (14 days) in all`);
    expect(text).toContain(`execution timeout (${hoursAndMinutes(EXECUTION_TIMEOUT_SECONDS)}, below)`);
    expect(text).toContain(`a run ended after more than ${hoursAndMinutes(SLOW_RUN_SECONDS)}`);
    const pipeline = (await readFile(new URL('../docs/pipeline.md', import.meta.url), 'utf8')).replace(
      /\s+/g,
      ' ',
    );
    expect(pipeline).toContain(`stops a run after ${hoursAndMinutes(EXECUTION_TIMEOUT_SECONDS)} (TimedOut)`);
  });
});
