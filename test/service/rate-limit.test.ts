import { describe, expect, it } from 'vitest';
import { RequestRateLimit } from '../../local/service/faults/index.js';

describe('RequestRateLimit (the maxRequestsPerSecond knob)', () => {
  it('lets a second of requests through, then answers with the seconds until a token is back', () => {
    let now = 0;
    const limit = new RequestRateLimit(() => now);
    expect(limit.take()).toBeUndefined();
    limit.setLimit(20);
    for (let i = 0; i < 20; i++) expect(limit.take()).toBeUndefined();
    expect(limit.take()).toBe(1);
    expect(limit.limited()).toBe(1);
    // 20 per second: one token every 50 ms.
    now += 50;
    expect(limit.take()).toBeUndefined();
    expect(limit.take()).toBe(1);
    now += 10_000;
    let admitted = 0;
    for (let i = 0; i < 100; i++) if (limit.take() === undefined) admitted++;
    expect(admitted).toBe(20);
  });

  it('is lifted by 0', () => {
    const limit = new RequestRateLimit(() => 0);
    limit.setLimit(1);
    limit.take();
    expect(limit.take()).toBe(1);
    limit.setLimit(0);
    for (let i = 0; i < 10; i++) expect(limit.take()).toBeUndefined();
  });
});
