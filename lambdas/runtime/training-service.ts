/**
 * The runtime's connection to the training service: a TrainingServiceClient per API key, its log
 * lines under the invocation's logger and each call traced. Only the entry files of the Tasks
 * that call the service import this module (lambdas/handlers/), so only their bundles hold the
 * client, undici and the Secrets Manager client.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { TrainingServiceClient } from '../service-client/index.js';
import { LAMBDA_CLIENT_OPTIONS } from './retry-budget.js';
import { ENV, requireEnv } from './environment.js';
import { RunError } from '../core/errors/errors.js';
import { emptySecretMessage } from '../core/errors/messages.js';
import {
  invocationLogger,
  type ApiKeySource,
  type ServiceConnection,
  type ServiceConnector,
  type TrainingServiceOptions,
} from './runtime.js';

export type { ApiKeySource, TrainingServiceOptions } from './runtime.js';
import { tracedClient } from './tracing.js';

/** The X-Ray subsegment of each service call is `### service.<method>`. */
const SERVICE_SEGMENT = '### service';

/** Seconds the API key is cached per container before Secrets Manager is asked again. */
export const API_KEY_CACHE_SECONDS = 300;

/** The service at `serviceUrl` with the key `apiKey` gives: a new client when the key changes. */
export function trainingService(options: TrainingServiceOptions): ServiceConnector {
  return ({ logger, tracer }) => {
    // `traced` is what steps get: the client itself, or a view of it that traces each call.
    let current: { key: string; client: TrainingServiceClient; traced: TrainingServiceClient } | undefined;
    return async (request) => {
      const key = await options.apiKey();
      if (current?.key !== key) {
        const previous = current?.client;
        const client = new TrainingServiceClient({
          ...options.clientOptions,
          baseUrl: options.serviceUrl,
          apiKey: key,
          // The client outlives invocations: it logs through the invocation's logger, keys and all.
          logger: {
            debug: (message) => {
              invocationLogger(logger).debug(message);
            },
            warn: (message) => {
              invocationLogger(logger).warn(message);
            },
          },
        });
        current = { key, client, traced: tracedClient(client, tracer, SERVICE_SEGMENT) };
        // A rotated key: the old client's connections are no longer needed.
        void previous?.close();
      }
      if (request?.signal === undefined) return current.traced;
      return tracedClient(current.client.withOptions(request), tracer, SERVICE_SEGMENT);
    };
  };
}

/**
 * The training service, as the entry files of the Tasks that call it connect it (LambdaConnections).
 * In a Lambda container: the URL and key secret the stack set, Lambda's retry budget.
 */
export const TRAINING_SERVICE: ServiceConnection = {
  fromEnvironment: (env, tracer) =>
    trainingService({
      serviceUrl: requireEnv(env, ENV.serviceUrl),
      apiKey: secretsManagerKey(requireEnv(env, ENV.apiKeySecret), undefined, tracer),
      clientOptions: LAMBDA_CLIENT_OPTIONS,
    }),
  fromOptions: trainingService,
};

/** What secretsManagerKey needs of Powertools' SecretsProvider (injected in tests). */
export interface SecretReader {
  get(name: string, options: { maxAge: number }): Promise<unknown>;
}

/**
 * The key from a Secrets Manager secret (its whole SecretString), cached per container for
 * API_KEY_CACHE_SECONDS: one read per container in the common case, and a rotated key is
 * picked up within minutes.
 */
export function secretsManagerKey(secretId: string, reader?: SecretReader, tracer?: Tracer): ApiKeySource {
  let provider = reader;
  return async () => {
    if (provider === undefined) {
      // Evaluated on first use (esbuild keeps a dynamic import lazy inside the bundle), and
      // never by local mode.
      const [{ SecretsProvider }, { SecretsManagerClient }] = await Promise.all([
        import('@aws-lambda-powertools/parameters/secrets'),
        import('@aws-sdk/client-secrets-manager'),
      ]);
      const client = new SecretsManagerClient({});
      provider = new SecretsProvider({ awsSdkV3Client: tracer?.captureAWSv3Client(client) ?? client });
    }
    const value = await provider.get(secretId, { maxAge: API_KEY_CACHE_SECONDS });
    if (typeof value !== 'string' || value.trim() === '') {
      throw new RunError('unauthorized', emptySecretMessage(secretId));
    }
    return value.trim();
  };
}
