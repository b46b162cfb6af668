/**
 * The simulated service's records in a file (`hopper local --data-dir`): what is written comes
 * back the same, Sets included, and a file that is not the service's is refused by name.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRecords, serializeRecords } from '../../local/service/domain/index.js';
import { startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import type { ServiceRecords } from '../../local/service/domain/index.js';

const started: SimulatedService[] = [];
const folders: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((service) => service.close()));
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

describe('the simulated service kept in a file', () => {
  it('round-trips records with Sets, and an answers map whose key is "set"', () => {
    const records = {
      nextSeq: 7,
      creditBase: 3,
      datasets: [
        {
          id: 'd1',
          files: [{ id: 'f1', upload: { read: { explicitIds: new Set(['a', 'b']), error: undefined } } }],
          structuring: { startedAt: 1, endsAt: 2, answers: { set: 'x' } },
        },
      ],
      models: [],
    } as unknown as ServiceRecords;
    const back = parseRecords(serializeRecords(records), 'state.json');
    expect(back).toEqual(records);
    const file = (
      back.datasets[0] as unknown as { files: { upload: { read: { explicitIds: Set<string> } } }[] }
    ).files[0];
    expect(file?.upload.read.explicitIds).toBeInstanceOf(Set);
  });

  it('a service started on the file of an earlier one has its credits and records', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hopper-service-'));
    folders.push(folder);
    const stateFile = join(folder, 'service.json');
    const first = await startSimulatedService({ credits: 5 }, { stateFile });
    started.push(first);
    const created = await fetch(`${first.apiUrl}/v1/datasets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kept', files: [{ name: 'a.csv', bytes: 10 }] }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    first.configure({ credits: 2 });
    await first.close();
    started.splice(0);

    const second = await startSimulatedService({ credits: 5 }, { stateFile });
    started.push(second);
    expect(second.credits()).toBe(2);
    const again = await fetch(`${second.apiUrl}/v1/datasets/${id}`, {
      headers: { authorization: `Bearer ${second.apiKey}` },
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { name: string }).name).toBe('kept');
  });

  it('refuses a file that is not its own, naming it', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hopper-service-'));
    folders.push(folder);
    const stateFile = join(folder, 'service.json');
    await writeFile(stateFile, '{"something":"else"}');
    await expect(startSimulatedService({}, { stateFile })).rejects.toThrow(
      `${stateFile} is not a simulated service's state`,
    );
  });
});
