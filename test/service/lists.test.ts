/** GET /v1/datasets and GET /v1/models: paging, order, filters and cursor binding (docs/service-contract.md, B10). */
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  api,
  createDataset,
  createModel,
  datasetAt,
  doneModel,
  expectError,
  expectStatus,
  tamper,
  useHarnesses,
} from '../helpers/service-http.js';
import type { DatasetRecord, Harness, ModelRecord, Page } from '../helpers/service-http.js';

const start = useHarnesses();

type ListPath = '/v1/datasets' | '/v1/models';

async function list<T extends { id: string }>(h: Harness, path: ListPath, query = ''): Promise<Page<T>> {
  return expectStatus(await api<Page<T>>(h, 'GET', `${path}${query === '' ? '' : `?${query}`}`), 200);
}

async function createDatasets(h: Harness, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createDataset(h, undefined, `ds ${i}`)).id);
  return ids;
}

/** Follows `next` to the end (bounded by maxPages); returns every page. */
async function allPages<T extends { id: string }>(
  h: Harness,
  path: ListPath,
  query: string,
  maxPages = 50,
): Promise<Page<T>[]> {
  const pages: Page<T>[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < maxPages; i++) {
    const q: string = [query, cursor === null ? '' : `cursor=${encodeURIComponent(cursor)}`]
      .filter(Boolean)
      .join('&');
    const page: Page<T> = await list<T>(h, path, q);
    pages.push(page);
    cursor = page.next;
    if (cursor === null) return pages;
  }
  throw new Error(`more than ${maxPages} pages`);
}

const ids = (records: { id: string }[]): string[] => records.map((r) => r.id);

/** A service with `n` models of one ready dataset (heldOutCount 0 keeps setup short). */
async function withModels(n: number): Promise<{ h: Harness; modelIds: string[] }> {
  const h = await start({ heldOutCount: 0, credits: 1000 });
  const ds = await datasetAt(h, 'ready');
  const modelIds: string[] = [];
  for (let i = 0; i < n; i++) modelIds.push(expectStatus(await createModel(h, ds.id), 201).id);
  return { h, modelIds };
}

describe.each<ListPath>(['/v1/datasets', '/v1/models'])('%s query rules', (path) => {
  it('answers an empty page when there is nothing', async () => {
    const h = await start();
    expect(await list(h, path)).toEqual({ data: [], next: null });
  });

  it.each(['0', '101', '1.5', 'abc', '', '-1', '1e1', ' 5'])(
    'refuses limit=%j with 400 invalid_request',
    async (limit) => {
      const h = await start();
      expectError(await api(h, 'GET', `${path}?limit=${encodeURIComponent(limit)}`), 400, 'invalid_request');
    },
  );

  it('accepts limit=1 and limit=100', async () => {
    const h = await start();
    await list(h, path, 'limit=1');
    await list(h, path, 'limit=100');
  });

  it.each(['foo=1', 'offset=0', 'page=2', 'Limit=5', 'dataset_id=x'])(
    'refuses the unknown parameter %s',
    async (q) => {
      const h = await start();
      expectError(await api(h, 'GET', `${path}?${q}`), 400, 'invalid_request');
    },
  );

  it.each(['yes', '1', 'TRUE', ''])('refuses usable=%j', async (usable) => {
    const h = await start();
    expectError(await api(h, 'GET', `${path}?usable=${usable}`), 400, 'invalid_request');
  });

  it('accepts usable=true and usable=false', async () => {
    const h = await start();
    await list(h, path, 'usable=true');
    await list(h, path, 'usable=false');
  });

  it('refuses forged cursors with 400 invalid_request', async () => {
    const h = await start();
    const forged = [
      'abc',
      '!!!not-base64!!!',
      Buffer.from(JSON.stringify({ list: 'datasets', after: 3 })).toString('base64url'),
      Buffer.from(JSON.stringify({ list: 'models', after: 3 })).toString('base64url'),
    ];
    for (const cursor of forged) {
      expectError(
        await api(h, 'GET', `${path}?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_request',
      );
    }
  });
});

describe('GET /v1/datasets paging', () => {
  it('defaults to 25 newest first, then the rest with next null', async () => {
    const h = await start();
    const created = await createDatasets(h, 27);
    const newestFirst = [...created].reverse();
    const first = await list<DatasetRecord>(h, '/v1/datasets');
    expect(ids(first.data)).toEqual(newestFirst.slice(0, 25));
    expect(first.next).toEqual(expect.any(String));
    expect(first.data[0]).toMatchObject({ kind: 'dataset', name: 'ds 26', status: 'uploading' });
    const second = await list<DatasetRecord>(h, '/v1/datasets', `cursor=${encodeURIComponent(first.next!)}`);
    expect(ids(second.data)).toEqual(newestFirst.slice(25));
    expect(second.next).toBeNull();
  });

  it('answers next null on a full last page', async () => {
    const h = await start();
    const created = await createDatasets(h, 10);
    const pages = await allPages<DatasetRecord>(h, '/v1/datasets', 'limit=5');
    expect(pages.map((p) => p.data.length)).toEqual([5, 5]);
    expect(pages.flatMap((p) => ids(p.data))).toEqual([...created].reverse());
  });

  it('keeps later pages stable while new records arrive at the top', async () => {
    const h = await start();
    const created = await createDatasets(h, 12);
    const newestFirst = [...created].reverse();
    const first = await list<DatasetRecord>(h, '/v1/datasets', 'limit=5');
    expect(ids(first.data)).toEqual(newestFirst.slice(0, 5));
    const arrived = await createDatasets(h, 3);
    const second = await list<DatasetRecord>(
      h,
      '/v1/datasets',
      `limit=5&cursor=${encodeURIComponent(first.next!)}`,
    );
    expect(ids(second.data)).toEqual(newestFirst.slice(5, 10));
    const third = await list<DatasetRecord>(
      h,
      '/v1/datasets',
      `limit=5&cursor=${encodeURIComponent(second.next!)}`,
    );
    expect(ids(third.data)).toEqual(newestFirst.slice(10));
    expect(third.next).toBeNull();
    const fresh = await list<DatasetRecord>(h, '/v1/datasets', 'limit=5');
    expect(ids(fresh.data)).toEqual([...[...arrived].reverse(), ...newestFirst.slice(0, 2)]);
  });

  it('refuses a tampered cursor and a models cursor', async () => {
    const { h } = await withModels(3);
    await createDatasets(h, 3);
    const page = await list(h, '/v1/datasets', 'limit=1');
    const cursor = page.next!;
    const middle = Math.floor(cursor.length / 2);
    const flipped = cursor.slice(0, middle) + tamper(cursor.slice(middle));
    expectError(
      await api(h, 'GET', `/v1/datasets?cursor=${encodeURIComponent(flipped)}`),
      400,
      'invalid_request',
    );
    const modelCursor = (await list(h, '/v1/models', 'limit=1')).next!;
    expectError(
      await api(h, 'GET', `/v1/datasets?cursor=${encodeURIComponent(modelCursor)}`),
      400,
      'invalid_request',
    );
    expectError(
      await api(h, 'GET', `/v1/models?cursor=${encodeURIComponent(cursor)}`),
      400,
      'invalid_request',
    );
  });

  it("refuses another service's cursor (same list, same filters)", async () => {
    const a = await start();
    const b = await start();
    await createDatasets(a, 2);
    await createDatasets(b, 2);
    const cursor = (await list(a, '/v1/datasets', 'limit=1')).next!;
    expect((await list(a, '/v1/datasets', `limit=1&cursor=${encodeURIComponent(cursor)}`)).data).toHaveLength(
      1,
    );
    expectError(
      await api(b, 'GET', `/v1/datasets?limit=1&cursor=${encodeURIComponent(cursor)}`),
      400,
      'invalid_request',
    );
  });

  it('filters by status across pages; a cursor is bound to its status filter', async () => {
    const h = await start({ heldOutCount: 0 });
    const ready: string[] = [];
    const uploading: string[] = [];
    for (let i = 0; i < 3; i++) {
      ready.push((await datasetAt(h, 'ready')).id);
      uploading.push((await createDataset(h)).id);
    }
    const pages = await allPages<DatasetRecord>(h, '/v1/datasets', 'status=ready&limit=2');
    expect(pages.map((p) => p.data.length)).toEqual([2, 1]);
    expect(pages.flatMap((p) => ids(p.data))).toEqual([...ready].reverse());
    expect(pages.flatMap((p) => p.data).every((d) => d.status === 'ready')).toBe(true);
    const onlyUploading = await list<DatasetRecord>(h, '/v1/datasets', 'status=uploading');
    expect(ids(onlyUploading.data)).toEqual([...uploading].reverse());

    const cursor = encodeURIComponent(pages[0]!.next!);
    expectError(await api(h, 'GET', `/v1/datasets?cursor=${cursor}`), 400, 'invalid_request');
    expectError(
      await api(h, 'GET', `/v1/datasets?status=uploading&cursor=${cursor}`),
      400,
      'invalid_request',
    );
    expectError(
      await api(h, 'GET', `/v1/datasets?status=ready&usable=true&cursor=${cursor}`),
      400,
      'invalid_request',
    );
  });

  it('usable=true leaves out expired datasets; a cursor is bound to its usable filter', async () => {
    const h = await start({ datasetTtlMs: 2 * HOUR });
    const old = await createDatasets(h, 3);
    h.service.clock.advance(HOUR);
    const recent = await createDatasets(h, 3);
    h.service.clock.advance(HOUR);
    const oldNewestFirst = [...old].reverse();
    const recentNewestFirst = [...recent].reverse();
    const all = await list<DatasetRecord>(h, '/v1/datasets');
    expect(ids(all.data)).toEqual([...recentNewestFirst, ...oldNewestFirst]);
    expect(all.data.filter((d) => d.next_action === 'expired').map((d) => d.id)).toEqual(oldNewestFirst);
    expect(all.data.filter((d) => d.status === 'expired')).toHaveLength(3);

    const usable = await allPages<DatasetRecord>(h, '/v1/datasets', 'usable=true&limit=2');
    expect(usable.flatMap((p) => ids(p.data))).toEqual(recentNewestFirst);
    const expired = await list<DatasetRecord>(h, '/v1/datasets', 'status=expired');
    expect(ids(expired.data)).toEqual(oldNewestFirst);

    const cursor = encodeURIComponent(usable[0]!.next!);
    expectError(await api(h, 'GET', `/v1/datasets?cursor=${cursor}`), 400, 'invalid_request');
    expectError(await api(h, 'GET', `/v1/datasets?usable=false&cursor=${cursor}`), 400, 'invalid_request');
  });
});

describe('GET /v1/models paging', () => {
  it('defaults to 25 newest first, stable while new models arrive, next null at the end', async () => {
    const { h, modelIds } = await withModels(27);
    const newestFirst = [...modelIds].reverse();
    const first = await list<ModelRecord>(h, '/v1/models');
    expect(ids(first.data)).toEqual(newestFirst.slice(0, 25));
    expect(first.data[0]).toMatchObject({ kind: 'model', version: 27 });
    const ds = first.data[0]!.dataset_id;
    const arrived = expectStatus(await createModel(h, ds), 201).id;
    const second = await list<ModelRecord>(h, '/v1/models', `cursor=${encodeURIComponent(first.next!)}`);
    expect(ids(second.data)).toEqual(newestFirst.slice(25));
    expect(second.next).toBeNull();
    expect((await list<ModelRecord>(h, '/v1/models', 'limit=1')).data[0]!.id).toBe(arrived);
  });

  it('filters by status=done and usable=true (files still there); cursors bound to the filters', async () => {
    const h = await start({ heldOutCount: 0, credits: 100 });
    const ds = await datasetAt(h, 'ready');
    const moved = await doneModel(h, { dataset: ds });
    const kept = await doneModel(h, { dataset: ds });
    const refunded = await doneModel(h, { dataset: ds });
    const keptToo = await doneModel(h, { dataset: ds });
    const queued = await doneModel(h, { dataset: ds, wait: false });
    h.service.removeModelFiles(moved.id, 'moved');
    h.service.removeModelFiles(refunded.id, 'refunded');

    const done = await allPages<ModelRecord>(h, '/v1/models', 'status=done&limit=1');
    const doneIds = done.flatMap((p) => ids(p.data));
    expect(doneIds).toEqual(expect.arrayContaining([keptToo.id, kept.id]));
    expect(doneIds).not.toContain(queued.id);
    expect(doneIds).not.toContain(refunded.id);
    expect(done.flatMap((p) => p.data).every((m) => m.status === 'done')).toBe(true);

    const usable = await allPages<ModelRecord>(h, '/v1/models', 'usable=true&limit=1');
    const usableIds = usable.flatMap((p) => ids(p.data));
    expect(usableIds).toContain(keptToo.id);
    expect(usableIds).toContain(kept.id);
    expect(usableIds).not.toContain(moved.id);
    expect(usableIds).not.toContain(refunded.id);

    const doneCursor = encodeURIComponent(done[0]!.next!);
    expectError(await api(h, 'GET', `/v1/models?cursor=${doneCursor}`), 400, 'invalid_request');
    expectError(await api(h, 'GET', `/v1/models?status=failed&cursor=${doneCursor}`), 400, 'invalid_request');
    const usableCursor = encodeURIComponent(usable[0]!.next!);
    expectError(
      await api(h, 'GET', `/v1/models?usable=false&cursor=${usableCursor}`),
      400,
      'invalid_request',
    );
  });

  it('status=failed selects failed trainings', async () => {
    const h = await start({ heldOutCount: 0, failTrainings: 1 });
    const ds = await datasetAt(h, 'ready');
    const failed = await doneModel(h, { dataset: ds });
    const done = await doneModel(h, { dataset: ds });
    expect([failed.status, done.status]).toEqual(['failed', 'done']);
    expect(ids((await list<ModelRecord>(h, '/v1/models', 'status=failed')).data)).toEqual([failed.id]);
    expect(ids((await list<ModelRecord>(h, '/v1/models', 'status=done')).data)).toEqual([done.id]);
  });

  it('usable=true leaves out models whose files expired', async () => {
    const h = await start({ heldOutCount: 0, modelFilesTtlMs: HOUR });
    const old = await doneModel(h);
    h.service.clock.advance(HOUR);
    const fresh = await doneModel(h);
    const usable = await list<ModelRecord>(h, '/v1/models', 'usable=true');
    expect(ids(usable.data)).toEqual([fresh.id]);
    const all = await list<ModelRecord>(h, '/v1/models');
    expect(all.data.find((m) => m.id === old.id)).toMatchObject({ next_action: 'none' });
  });
});
