/**
 * The API key secret: read once per container and cached, re-read after the cache runs out.
 * Secrets Manager has no local server, so a loopback HTTP server speaks the one call of its
 * JSON protocol that Powertools makes; everything above it (Powertools' cache, the SDK) is real.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import { API_KEY_CACHE_SECONDS, secretsManagerKey } from '../../lambdas/runtime/index.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint, type AwsJsonRequest } from '../helpers/aws-json-endpoint.js';

interface FakeSecrets {
  readonly client: SecretsManagerClient;
  readonly requests: AwsJsonRequest[];
  value: string;
  close(): Promise<void>;
}

/** Secrets Manager's GetSecretValue, answering the current `value`. */
async function secretsServer(initial: string): Promise<FakeSecrets> {
  const state = { value: initial };
  const endpoint = await startAwsJsonEndpoint('application/x-amz-json-1.1', () => ({
    status: 200,
    body: { ARN: 'arn:aws:secretsmanager:us-east-1:1:secret:k', Name: 'k', SecretString: state.value },
  }));
  const client = new SecretsManagerClient({ ...CLIENT_SETTINGS, endpoint: endpoint.url });
  return Object.assign(state, {
    client,
    requests: endpoint.requests,
    close: async () => {
      client.destroy();
      await endpoint.close();
    },
  });
}

let secrets: FakeSecrets | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await secrets?.close();
  secrets = undefined;
});

describe('the API key secret', () => {
  it('is read once per container and cached for a few minutes', async () => {
    secrets = await secretsServer('key-1');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-01-01T00:00:00Z') });
    const apiKey = secretsManagerKey(
      'hopper/api-key',
      new SecretsProvider({ awsSdkV3Client: secrets.client }),
    );

    expect(await apiKey()).toBe('key-1');
    expect(await apiKey()).toBe('key-1');
    expect(secrets.requests).toHaveLength(1);
    expect(secrets.requests[0]).toEqual({
      target: 'secretsmanager.GetSecretValue',
      body: { SecretId: 'hopper/api-key' },
    });

    // A rotated key is picked up once the cache runs out.
    secrets.value = 'key-2';
    vi.setSystemTime(Date.now() + (API_KEY_CACHE_SECONDS - 1) * 1000);
    expect(await apiKey()).toBe('key-1');
    vi.setSystemTime(Date.now() + 2000);
    expect(await apiKey()).toBe('key-2');
    expect(secrets.requests).toHaveLength(2);
  });

  it('refuses an empty secret with a message that says what to put there', async () => {
    secrets = await secretsServer('   ');
    const apiKey = secretsManagerKey(
      'hopper/api-key',
      new SecretsProvider({ awsSdkV3Client: secrets.client }),
    );
    const error = await apiKey().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunError);
    expect((error as RunError).code).toBe('unauthorized');
    expect((error as RunError).message).toMatch(/hopper\/api-key holds no API key/);
  });
});
