/**
 * The caller's deadline (the client's `signal`, from withOptions): a call in flight stops when
 * it aborts, no retry or retry wait goes past it, and the call fails with a retryable
 * DeadlineError, whatever the service is doing. Against the simulated service over loopback; the
 * per-request timeout is set far beyond the deadline, so only the deadline can end these calls.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  DeadlineError,
  NotFoundError,
  UnavailableError,
  type TrainingServiceClientOptions,
} from '../../lambdas/service-client/index.js';
import { rejectionOf, streamError, trainableDataset, useFixtures } from './helpers.js';

const fixtures = useFixtures();

/** Longer than any test: a call that ends did so because of the deadline, not a timeout. */
const NO_TIMEOUT: Partial<TrainingServiceClientOptions> = { timeoutMs: 10 * 60_000 };
const STALL_MS = 10 * 60_000;
/** The deadline of the calls below: long enough to send the request, short beside the stall. */
const DEADLINE_MS = 300;

describe('a call stops at its deadline', () => {
  it('a stalled answer: DeadlineError, retryable, the request sent once, the base client unbound', async () => {
    const service = await fixtures.service({
      faults: [{ endpoint: 'getDataset', kind: 'stall', stallMs: STALL_MS, count: 1 }],
    });
    const base = fixtures.client(service, NO_TIMEOUT);
    const dataset = await base.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 1 }] });
    const bound = base.withOptions({ signal: AbortSignal.timeout(DEADLINE_MS) });

    const error = await rejectionOf(bound.getDataset(dataset.id));

    expect(error).toBeInstanceOf(DeadlineError);
    expect(error).toMatchObject({ code: 'deadline_exceeded', retryable: true, requestSent: true });
    expect((error as Error).message).toContain('GET');
    expect(service.requestCount('getDataset')).toBe(1);
    // The original has no deadline and shares the pool: it still works, the view's abort aside.
    expect((await base.getDataset(dataset.id)).id).toBe(dataset.id);
  });

  it('a deadline that has passed sends nothing', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, NO_TIMEOUT).withOptions({ signal: AbortSignal.abort() });

    const error = await rejectionOf(client.createDataset({ name: 'd', files: [{ name: 'a', bytes: 1 }] }));

    expect(error).toMatchObject({ code: 'deadline_exceeded', requestSent: false });
    expect(service.requestCount('createDataset')).toBe(0);
  });

  it('a wait between retries that would outlast it is cut short, with the failure as cause', async () => {
    const service = await fixtures.service({ faults: [{ endpoint: 'listEncoders', kind: '503' }] });
    const deadline = new AbortController();
    // A sleep that would never end: only the deadline can end the wait.
    const client = fixtures
      .client(service, {
        ...NO_TIMEOUT,
        sleep: () => {
          deadline.abort();
          return new Promise<void>(() => undefined);
        },
      })
      .withOptions({ signal: deadline.signal });

    const error = await rejectionOf(client.listEncoders());

    expect(error).toBeInstanceOf(DeadlineError);
    expect((error as Error).cause).toBeInstanceOf(UnavailableError);
    expect(service.requestCount('listEncoders')).toBe(1);
  });

  it('a final answer stays what it is: no deadline error for a 404', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service).withOptions({ signal: AbortSignal.timeout(60_000) });
    expect(await rejectionOf(client.getModel('00000000-0000-4000-8000-000000000000'))).toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe('transfers stop at the deadline', () => {
  it('a stalled upload', async () => {
    const service = await fixtures.service();
    const base = fixtures.client(service, NO_TIMEOUT);
    const dataset = await base.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 5 }] });
    service.configure({ faults: [{ endpoint: 'fileUpload', kind: 'stall', stallMs: STALL_MS }] });
    const client = base.withOptions({ signal: AbortSignal.timeout(DEADLINE_MS) });

    const error = await rejectionOf(
      client.uploadFile(dataset.id, dataset.files[0]!, () => Readable.from([Buffer.from('id\n1\n')])),
    );

    expect(error).toBeInstanceOf(DeadlineError);
    expect(service.requestCount('fileUpload')).toBe(1);
  });

  it('a stalled download', async () => {
    const service = await fixtures.service({ heldOutCount: 0 });
    const base = fixtures.client(service, NO_TIMEOUT);
    const dataset = await trainableDataset(base);
    const model = await base.startTraining(dataset.id, 'enc-small');
    service.configure({ faults: [{ endpoint: 'fileDownload', kind: 'stall', stallMs: STALL_MS }] });
    const client = base.withOptions({ signal: AbortSignal.timeout(DEADLINE_MS) });

    const error = await streamError(client.downloadModel(model.id));

    expect(error).toBeInstanceOf(DeadlineError);
    expect(service.requestCount('fileDownload')).toBe(1);
  });
});
