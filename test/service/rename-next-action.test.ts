/**
 * The renameNextActions knob: records speak a next_action no client knows, while the service's
 * own rules stay those of the real value (so a test can reach the unknown value mid-flow).
 */
import { describe, expect, it } from 'vitest';
import {
  api,
  datasetAt,
  doneModel,
  expectStatus,
  getDataset,
  useHarnesses,
  type DatasetRecord,
  type ModelRecord,
  type Page,
} from '../helpers/service-http.js';

describe('renameNextActions', () => {
  const start = useHarnesses();

  it('shows the renamed value on GET, on lists, and on the answers of actions', async () => {
    const h = await start({ renameNextActions: { start_training: 'celebrate' }, heldOutCount: 0 });
    const dataset = await datasetAt(h, 'ready');
    expect(dataset).toMatchObject({ status: 'ready', step: 3, next_action: 'celebrate' });
    const listed = expectStatus(await api<Page<DatasetRecord>>(h, 'GET', '/v1/datasets'), 200);
    expect(listed.data.map((record) => record.next_action)).toEqual(['celebrate']);
  });

  it('leaves the service rules on the real value: a renamed start_training still trains', async () => {
    const h = await start({ renameNextActions: { start_training: 'celebrate', download: 'fetch' } });
    const model = await doneModel(h);
    expect(model).toMatchObject({ status: 'done', step: 5, next_action: 'fetch' });
    const listed = expectStatus(await api<Page<ModelRecord>>(h, 'GET', '/v1/models'), 200);
    expect(listed.data[0]?.next_action).toBe('fetch');
    expectStatus(await api(h, 'GET', `/v1/models/${model.id}/download`), 200);
  });

  it('changes nothing it does not name, and can be switched off while running', async () => {
    const h = await start({ renameNextActions: { download: 'fetch' } });
    const dataset = await datasetAt(h, 'read');
    expect(dataset.next_action).toBe('structure');
    h.service.configure({ renameNextActions: { structure: 'ponder' } });
    expect((await getDataset(h, dataset.id)).next_action).toBe('ponder');
    h.service.configure({ renameNextActions: {} });
    expect((await getDataset(h, dataset.id)).next_action).toBe('structure');
  });

  it('refuses a name that is not a next_action of the contract', async () => {
    await expect(start({ renameNextActions: { dance: 'x' } })).rejects.toThrow(/dance is not a next_action/);
  });
});
