import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../lambdas/run/errors.js';

describe('docs/errors.md', () => {
  it('documents every run error code, and no other', async () => {
    const text = await readFile(new URL('../docs/errors.md', import.meta.url), 'utf8');
    const documented = [...text.matchAll(/^\|\s*`([a-z_]+)`\s*\|/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual([...ERROR_CODES].sort());
  });
});
