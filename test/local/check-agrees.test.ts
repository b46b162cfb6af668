/**
 * Issue 28's five drops that `hopper check` once let through while the run failed: each goes
 * through `hopper check --json` and `hopper run` (in-process, against a simulated service over
 * loopback), which must give the same verdict and code; the refused ones must not reach the
 * service at all, and the ones that pass must train.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCheckCommand, type CheckVerdict } from '../../local/cli/check.js';
import { runRunCommand } from '../../local/cli/run.js';
import { ENDPOINTS, startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { LABELS_BY_ID, REVIEWS_CSV, writeDropFolder } from '../helpers/fixtures.js';

const TEST_MS = 120_000;

let work = '';
let service: SimulatedService | undefined;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-agrees-'));
  service = await startSimulatedService({ ...BRISK_SERVICE, credits: 10 });
});
afterAll(async () => {
  await service?.close();
  await rm(work, { recursive: true, force: true });
});

const good = { 'reviews.csv': REVIEWS_CSV, 'labels.csv': LABELS_BY_ID, 'train.json': '{}' };

/** The five drops, by folder name, and the code both commands must give (null: it trains). */
const DROPS: readonly (readonly [string, Record<string, string | Buffer>, string | null])[] = [
  [
    'latin1',
    { ...good, 'reviews.csv': Buffer.from(REVIEWS_CSV.replace('excellent', 'très bien'), 'latin1') },
    'dataset_unreadable',
  ],
  ['ds-store', { ...good, '.DS_Store': Buffer.from([0, 0, 0, 1, 0x42, 0x75, 0x64, 0x31, 0xff]) }, null],
  ['no-label-rows', { ...good, 'labels.csv': 'id,label\n' }, 'label_missing'],
  [
    'two-labels',
    { ...good, 'labels.csv': `${LABELS_BY_ID}\nr1,negative\nr2,positive\nr3,positive\nr4,negative` },
    'label_ambiguous',
  ],
  ['😀'.repeat(63), good, null],
];

function requests(): number {
  return ENDPOINTS.reduce((sum, endpoint) => sum + (service?.requestCount(endpoint) ?? 0), 0);
}

it.each(DROPS)(
  '%s: hopper check and hopper run give the same verdict and code',
  async (name, files, code) => {
    const folder = await writeDropFolder(work, name, files);
    const check = await runCommandCaptured(runCheckCommand, [folder, '--json'], {});
    const verdict = JSON.parse(check.stdout) as CheckVerdict;
    expect({ exit: check.code, code: verdict.error?.code ?? null }).toEqual({
      exit: code === null ? 0 : 1,
      code,
    });
    const before = requests();
    const out = join(work, 'out');
    const { apiUrl = '', apiKey = '' } = service ?? {};
    const argv = [folder, '--service-url', apiUrl, '--api-key', apiKey, '--out', out, '--wait-ms', '10'];
    const run = await runCommandCaptured(runRunCommand, argv, {});
    if (code !== null) {
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: `hopper run: ${code}: ${verdict.error?.message ?? ''}\n`,
      });
      expect(requests()).toBe(before);
      return;
    }
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const record = JSON.parse(await readFile(join(out, name, 'model.json'), 'utf8')) as {
      run: { files: string[] };
    };
    expect(record.run.files).toEqual(['reviews.csv']);
  },
  TEST_MS,
);
