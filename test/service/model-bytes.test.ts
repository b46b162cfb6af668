/** The deterministic model-file generator: position-addressable, stable, and never repeating. */
import { describe, expect, it } from 'vitest';
import { modelBytesAt } from '../../local/service/index.js';

const GiB = 2 ** 30;

describe('modelBytesAt', () => {
  it('gives the same bytes for a range whether read whole or in pieces, at any offset', () => {
    for (const start of [0, 3, 16 * GiB - 10, 2 ** 40 - 7]) {
      const whole = modelBytesAt('model-a', start, 20);
      const pieces = Buffer.concat([
        modelBytesAt('model-a', start, 7),
        modelBytesAt('model-a', start + 7, 13),
      ]);
      expect(pieces.equals(whole)).toBe(true);
    }
  });

  it('does not repeat every 16 GiB (where a 32-bit word index would wrap)', () => {
    expect(modelBytesAt('model-a', 16 * GiB, 64).equals(modelBytesAt('model-a', 0, 64))).toBe(false);
  });

  it('differs between models', () => {
    expect(modelBytesAt('model-a', 0, 64).equals(modelBytesAt('model-b', 0, 64))).toBe(false);
  });
});
