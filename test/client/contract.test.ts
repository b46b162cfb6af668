import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  DatasetSchema,
  ENDPOINTS,
  endpointLabel,
  filesRetentionMs,
  isDatasetNamed,
  listQuery,
  MAX_DATASET_NAME_LENGTH,
  ModelSchema,
  pageSchema,
  pathOf,
  runDatasetName,
  structureBody,
} from '../../lambdas/service-client/contract.js';
import { formatPath, parseBody } from '../../lambdas/service-client/http.js';
import { UnexpectedResponseError, UnsupportedNextActionError } from '../../lambdas/service-client/index.js';

const NOW = '2025-01-01T00:00:00.000Z';

function datasetBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'dataset',
    id: 'd1',
    name: 'reviews',
    status: 'uploading',
    step: 1,
    next_action: 'upload_files',
    created_at: NOW,
    updated_at: NOW,
    expires_at: NOW,
    error: null,
    files: [
      {
        id: 'f1',
        name: 'a.csv',
        bytes: 10,
        status: 'pending',
        upload_url: 'http://x/u',
        upload_expires_at: NOW,
      },
    ],
    ...overrides,
  };
}

function modelBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'model',
    id: 'm1',
    dataset_id: 'd1',
    name: 'reviews v1',
    status: 'queued',
    step: 4,
    next_action: 'wait',
    version: 1,
    encoder: 'enc-small',
    created_at: NOW,
    updated_at: NOW,
    ...overrides,
  };
}

const DATASET = 'GET /v1/datasets/{dataset}';

describe('paths', () => {
  it('fills and encodes path parameters', () => {
    expect(pathOf(ENDPOINTS.completeFile, { dataset: 'd 1', file: 'f/2' })).toBe(
      '/v1/datasets/d%201/files/f%2F2/complete',
    );
    expect(endpointLabel(ENDPOINTS.startTraining)).toBe('POST /v1/datasets/{dataset}/models');
  });

  it('refuses a missing or empty parameter rather than call the wrong path', () => {
    expect(() => pathOf(ENDPOINTS.getDataset, {})).toThrow(/missing \{dataset\}/);
    expect(() => pathOf(ENDPOINTS.getDataset, { dataset: '' })).toThrow(TypeError);
  });

  it('marks only the creating and paying calls as not retried on ambiguous failures', () => {
    const unprocessedOnly = Object.entries(ENDPOINTS)
      .filter(([, endpoint]) => endpoint.retry === 'unprocessed')
      .map(([name]) => name);
    expect(unprocessedOnly).toEqual(['createDataset', 'startTraining']);
  });
});

describe("a run's dataset name", () => {
  it("is the user's name and a tag of the run: the same for a run, another for another run", () => {
    const name = runDatasetName('my reviews', 'reviews-0123456789abcdef');
    expect(name).toMatch(/^my reviews · run [0-9a-f]{12}$/);
    expect(runDatasetName('my reviews', 'reviews-0123456789abcdef')).toBe(name);
    expect(runDatasetName('my reviews', 'reviews-fedcba9876543210')).not.toBe(name);
  });

  it("fits the service's 200 code units, cutting the name, never inside a surrogate pair", () => {
    for (const long of ['x'.repeat(500), `${'x'.repeat(180)}😀😀😀`, `${'x'.repeat(179)}😀😀😀`]) {
      const name = runDatasetName(long, 'run-1');
      expect(name.length).toBeLessThanOrEqual(MAX_DATASET_NAME_LENGTH);
      expect(name).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
      expect(isDatasetNamed(name, long)).toBe(true);
    }
  });

  it("is told from other names: the user's own is one of it, another name or tag is not", () => {
    const name = runDatasetName('reviews', 'run-1');
    expect(isDatasetNamed(name, 'reviews')).toBe(true);
    expect(isDatasetNamed('reviews', 'reviews')).toBe(true);
    expect(isDatasetNamed(name, 'reviews2')).toBe(false);
    expect(isDatasetNamed(runDatasetName('reviews2', 'run-1'), 'reviews')).toBe(false);
    expect(isDatasetNamed('reviews · run nothex', 'reviews')).toBe(false);
  });
});

describe('list queries', () => {
  it('sends only what is given', () => {
    expect(listQuery({}, undefined)).toEqual({});
    expect(listQuery({ status: 'ready', usable: true, limit: 100 }, 'c1')).toEqual({
      status: 'ready',
      usable: 'true',
      limit: '100',
      cursor: 'c1',
    });
  });

  it('rejects a limit outside 1..100', () => {
    for (const limit of [0, 101, 2.5]) expect(() => listQuery({ limit }, undefined)).toThrow(RangeError);
  });
});

describe('structure body', () => {
  it('is {} without answers, else the answers with exactly id and answer', () => {
    expect(structureBody(undefined)).toEqual({});
    const extra = { id: 'q1', answer: 'yes', note: 'dropped' } as { id: string; answer: string };
    expect(structureBody([extra])).toEqual({ questions: [{ id: 'q1', answer: 'yes' }] });
  });
});

describe('records validated at the edge', () => {
  it('ignores unknown fields and defaults absent optional ones to null', () => {
    const dataset = parseBody(DatasetSchema, datasetBody({ surprise: 1, error: undefined }), DATASET, 200);
    expect(dataset).not.toHaveProperty('surprise');
    expect(dataset.error).toBeNull();
    expect(dataset.questions).toBeNull();
    const model = parseBody(ModelSchema, modelBody(), 'GET /v1/models/{model}', 200);
    expect(model.onnx_bytes).toBeNull();
    expect(model.metrics).toBeNull();
  });

  it('keeps uploaded files without upload_url', () => {
    const files = [{ id: 'f1', name: 'a.csv', bytes: 10, status: 'uploaded' }];
    expect(parseBody(DatasetSchema, datasetBody({ files }), DATASET, 200).files[0]?.upload_url).toBeNull();
  });

  it('names the endpoint and the field path of a missing or ill-typed required field', () => {
    const catchError = (body: unknown) => {
      try {
        parseBody(DatasetSchema, body, DATASET, 200);
      } catch (error) {
        return error;
      }
      throw new Error('expected a failure');
    };
    const missing = catchError(datasetBody({ id: undefined }));
    expect(missing).toBeInstanceOf(UnexpectedResponseError);
    expect(missing).toMatchObject({ endpoint: DATASET, fieldPath: 'id', status: 200, retryable: false });
    expect((missing as Error).message).toMatch(/^GET \/v1\/datasets\/\{dataset\}: unexpected answer: id: /);

    const files = [{ id: 'f1', name: 'a.csv', bytes: '10', status: 'pending' }];
    expect(catchError(datasetBody({ files }))).toMatchObject({ fieldPath: 'files[0].bytes' });
    expect(catchError(datasetBody({ kind: 'model' }))).toMatchObject({ fieldPath: 'kind' });
    expect(catchError('not an object')).toMatchObject({ fieldPath: '' });
  });

  it('names an unknown next_action as unsupported, in records and in list items', () => {
    const record = () => parseBody(DatasetSchema, datasetBody({ next_action: 'publish' }), DATASET, 200);
    expect(record).toThrow(UnsupportedNextActionError);
    expect(record).toThrow(/^unsupported next_action: publish$/);
    const page = { data: [modelBody(), modelBody({ next_action: 'evaluate' })], next: null };
    try {
      parseBody(pageSchema(ModelSchema), page, 'GET /v1/models', 200);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UnsupportedNextActionError);
      expect(error).toMatchObject({ nextAction: 'evaluate', code: 'unsupported_next_action' });
      expect((error as Error).message).toBe('unsupported next_action: evaluate');
    }
  });

  it('refuses a status it does not know, naming the field, in records and in list items', () => {
    const refusal = (schema: z.ZodType, body: unknown) => () => parseBody(schema, body, DATASET, 200);
    expect(refusal(DatasetSchema, datasetBody({ status: 'archived' }))).toThrow(UnexpectedResponseError);
    expect(refusal(DatasetSchema, datasetBody({ status: 'archived' }))).toThrow(
      /unexpected answer: status: /,
    );
    const page = { data: [modelBody(), modelBody({ status: 'cancelled' })], next: null };
    expect(refusal(pageSchema(ModelSchema), page)).toThrow(/unexpected answer: data\[1\]\.status: /);
    expect(parseBody(ModelSchema, modelBody({ status: 'refunded' }), DATASET, 200).status).toBe('refunded');
  });

  it('treats a next_action of the wrong type as an unexpected answer, not an unsupported action', () => {
    expect(() => parseBody(DatasetSchema, datasetBody({ next_action: 3 }), DATASET, 200)).toThrow(
      UnexpectedResponseError,
    );
  });

  it('reads a page with next absent as the last page', () => {
    expect(parseBody(pageSchema(z.string()), { data: ['a'] }, 'GET /v1/x', 200)).toEqual({
      data: ['a'],
      next: null,
    });
  });

  it('formats field paths', () => {
    expect(formatPath([])).toBe('');
    expect(formatPath(['data', 3, 'files', 0, 'name'])).toBe('data[3].files[0].name');
  });
});

describe('files retention of a done model', () => {
  const model = (overrides: Record<string, unknown>) => ModelSchema.parse(modelBody(overrides));

  it('is files_expire_at minus public_at, else minus updated_at', () => {
    const expires = '2025-01-01T00:00:08.000Z';
    expect(filesRetentionMs(model({ public_at: NOW, files_expire_at: expires }))).toBe(8_000);
    expect(
      filesRetentionMs(model({ updated_at: '2025-01-01T00:00:02.000Z', files_expire_at: expires })),
    ).toBe(6_000);
  });

  it('is null when the record does not tell', () => {
    expect(filesRetentionMs(model({}))).toBeNull();
    expect(
      filesRetentionMs(model({ public_at: '2025-01-02T00:00:00.000Z', files_expire_at: NOW })),
    ).toBeNull();
  });
});
