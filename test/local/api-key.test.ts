/**
 * The API key through local mode with a service given by URL and key (as `--service-url` and
 * `--api-key` give it): never in a state's input or output, an execution's error, the status
 * file or model.json, whether the service takes the key or refuses it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { modelRecordKey } from '../../lambdas/storage/keys.js';
import { startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { dropAndRun, useLocalMode } from '../helpers/local-mode.js';
import { readText } from '../helpers/pipeline.js';
import { exampleDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const KEY = 'sk-hopper-7Qx2-SECRET';
let service: SimulatedService | undefined;
afterEach(async () => {
  await service?.close();
});

describe('the API key in local mode', () => {
  it("is in no state's input or output, no error, no status file and no model.json", async () => {
    service = await startSimulatedService({ ...BRISK_SERVICE, apiKey: KEY });
    const good = await fixture.start({ service: { url: service.apiUrl, apiKey: KEY } });
    const success = await dropAndRun(good, 'key-good', exampleDrop());
    expect(success.outcome.status).toBe('SUCCEEDED');

    const refusedMode = await fixture.start({ service: { url: service.apiUrl, apiKey: `${KEY}-WRONG` } });
    const refused = await dropAndRun(refusedMode, 'key-wrong', {
      'reviews.csv': 'id,text\nr1,good\n',
      'train.json': '{}',
    });
    expect(refused.status?.error?.code).toBe('unauthorized');
    expect(refused.outcome).toMatchObject({ status: 'FAILED', error: 'unauthorized' });

    const modelJson = await readText(
      good.s3.client,
      good.bucket,
      modelRecordKey('key-good', success.status?.model_id ?? ''),
    );
    const events = [...success.events, ...refused.events].map((event) => JSON.stringify(event));
    // The events carry every state's data, so a key in any slot would show here.
    expect(success.events.length).toBeGreaterThan(20);
    expect(events.some((event) => event.includes(success.status?.dataset_id ?? 'no dataset'))).toBe(true);
    for (const text of [
      ...events,
      JSON.stringify(success.status),
      JSON.stringify(refused.status),
      JSON.stringify(refused.outcome),
      modelJson ?? 'no model.json',
    ]) {
      expect(text).not.toContain(KEY);
    }
  });
});
