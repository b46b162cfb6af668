/**
 * The API key never shows: not in messages, log lines, enumerable fields, nor the cause chain of
 * any error, whatever failed, even when a server echoes the key back.
 */
import { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../lambdas/service-client/index.js';
import { refusingUrl, rejectionOf, streamError, trainableDataset, useFixtures } from './helpers.js';

const fixtures = useFixtures();
const KEY = 'sk-live-4f9a1c7e-very-secret';
const WRONG_KEY = 'sk-live-0b2d8e3f-also-secret';

function expectNoKey(value: unknown, keys: readonly string[]): void {
  const views = [
    inspect(value, { depth: Infinity, showHidden: true }),
    inspect(value, { depth: Infinity }),
    JSON.stringify(value),
    value instanceof Error ? `${value.message}\n${value.stack ?? ''}` : '',
  ];
  for (const view of views) for (const key of keys) expect(view).not.toContain(key);
}

describe('the API key stays secret', () => {
  it('in errors of every kind, their causes, and the log', async () => {
    const lines: string[] = [];
    const logger = { debug: (line: string) => lines.push(line), warn: (line: string) => lines.push(line) };
    const service = await fixtures.service({ apiKey: KEY, heldOutCount: 0, credits: 1 });
    const client = fixtures.client(service, {
      logger,
      maxRetries: 1,
      timeoutMs: 150,
      maxTransferAttempts: 2,
    });
    const errors: unknown[] = [];

    errors.push(await rejectionOf(fixtures.client(service, { apiKey: WRONG_KEY, logger }).listEncoders()));
    errors.push(await rejectionOf(client.getModel('00000000-0000-4000-8000-000000000000')));
    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, 'enc-small');
    errors.push(await rejectionOf(client.startTraining(dataset.id, 'enc-small'))); // no credits
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'drop' }] });
    errors.push(await rejectionOf(client.getDataset(dataset.id)));
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'stall', stallMs: 1000 }] });
    errors.push(await rejectionOf(client.getDataset(dataset.id)));
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '429', retryAfterSeconds: 0 }] });
    errors.push(await rejectionOf(client.listEncoders()));
    service.configure({ faults: [] });

    const upload = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 100 }] });
    errors.push(
      await rejectionOf(
        client.uploadFile(upload.id, upload.files[0]!, () => Readable.from([Buffer.from('x')])),
      ),
    );
    service.removeModelFiles(model.id, 'moved');
    errors.push(await streamError(client.downloadModel(model.id)));

    const refused = fixtures.client(service, { baseUrl: await refusingUrl(), logger, maxRetries: 0 });
    errors.push(await rejectionOf(refused.startTraining(dataset.id, 'enc-small')));

    // A misbehaving server that echoes the Authorization header everywhere it can.
    const echo = await fixtures.stub((req, res) => {
      const auth = req.headers.authorization ?? '';
      if (req.url === '/v1/encoders') {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: auth, message: `you sent ${auth}` }));
      } else if (req.url?.startsWith('/v1/models/')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        const at = '2026-01-01T00:00:00.000Z';
        const fields = { dataset_id: 'd', name: 'm', status: 'done', step: 5, version: 1, encoder: 'e' };
        res.end(
          JSON.stringify({
            kind: 'model',
            id: 'm',
            ...fields,
            created_at: at,
            updated_at: at,
            next_action: auth,
          }),
        );
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'dataset', id: auth }));
      }
    });
    const echoed = fixtures.client(service, { baseUrl: echo, logger });
    errors.push(await rejectionOf(echoed.listEncoders()));
    errors.push(await rejectionOf(echoed.getModel('m')));
    errors.push(await rejectionOf(echoed.getDataset('d')));

    const codes = errors.map((error) => (error as ServiceError).code);
    expect(codes).toEqual([
      'unauthorized',
      'not_found',
      'no_credits',
      'connection_error',
      'timeout',
      'rate_limited',
      'size_mismatch',
      'files_expired',
      'connection_error',
      'invalid_request',
      'unsupported_next_action',
      'unexpected_response',
    ]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(ServiceError);
      expectNoKey(error, [KEY, WRONG_KEY]);
    }
    expect((errors[9] as Error).message).toContain('you sent Bearer [redacted]');
    expect(lines.length).toBeGreaterThan(10);
    expectNoKey(lines, [KEY, WRONG_KEY]);
    expectNoKey(client, [KEY]);
  });
});
