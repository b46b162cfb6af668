import { describe, expect, it } from 'vitest';
import { TrainingServiceClient } from '../../lambdas/service-client/index.js';

const KEY = 'sk-unit-constructor-secret';

function construct(overrides: Record<string, unknown>): unknown {
  try {
    return new TrainingServiceClient({ baseUrl: 'http://127.0.0.1:1', apiKey: KEY, ...overrides });
  } catch (error) {
    return error;
  }
}

describe('TrainingServiceClient options', () => {
  it('rejects what cannot work, without echoing the key', () => {
    const failures = [
      construct({ baseUrl: 'not a url' }),
      construct({ baseUrl: 'ftp://example.com' }),
      construct({ apiKey: '' }),
      construct({ timeoutMs: 0 }),
      construct({ maxRetries: -1 }),
      construct({ backoffCapMs: Number.NaN }),
    ];
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(Error);
      expect(String(failure)).not.toContain(KEY);
    }
  });

  it('drops trailing slashes of the base URL and closes its own agent', async () => {
    const client = new TrainingServiceClient({ baseUrl: 'http://127.0.0.1:1/api//', apiKey: KEY });
    expect(client.baseUrl).toBe('http://127.0.0.1:1/api');
    await client.close();
  });
});
