/**
 * `hopper check` against the run, on every case of the bad-input corpus: each drop is put into
 * the real local S3 and judged by ValidateDrop's domain function, and the same files in a local
 * folder are judged by `hopper check --json`; the verdicts, codes and messages must be the same.
 * The cases only the service decides ('run') pass both, and check names their code among what the
 * run decides once it starts. A simulated service runs all along, its address in the command's
 * environment as `hopper local` would give it: check sends it nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunError } from '../../../lambdas/core/errors/index.js';
import { validateDropStep } from '../../../lambdas/steps/validate-drop.js';
import { inBucketWords } from '../../helpers/run-errors.js';
import { runCheckCommand, type CheckVerdict } from '../../../local/cli/check.js';
import { ENDPOINTS, startSimulatedService, type SimulatedService } from '../../../local/service/index.js';
import { runCommandCaptured } from '../../helpers/commands.js';
import { stepEnv, usePipelineFixtures } from '../../helpers/pipeline.js';
import { CASES } from './cases.js';
import { uniqueDrop, writeDropFolder } from '../../helpers/fixtures.js';

const fixtures = usePipelineFixtures();
let work = '';
let service: SimulatedService | undefined;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-check-corpus-'));
  service = await startSimulatedService({});
});

afterAll(async () => {
  await service?.close();
  await rm(work, { recursive: true, force: true });
});

/** What ValidateDrop makes of the drop in the bucket: passed, or its code and message. */
async function runsVerdict(drop: string, files: Readonly<Record<string, string | Buffer>>) {
  const state = await fixtures.dropped(files, drop);
  try {
    await validateDropStep.run(state, stepEnv(fixtures.s3Runtime()));
    return null;
  } catch (error) {
    if (!(error instanceof RunError)) throw error;
    return { code: error.code, message: error.detail };
  }
}

/** `hopper check --json` of the same files in a local folder named after the drop. */
async function checksVerdict(drop: string, files: Readonly<Record<string, string | Buffer>>) {
  const folder = await writeDropFolder(work, drop, files);
  const env = { HOPPER_SERVICE_URL: service?.apiUrl, HOPPER_API_KEY: service?.apiKey };
  const result = await runCommandCaptured(runCheckCommand, [folder, '--json'], env);
  expect(result.stderr).toBe('');
  const verdict = JSON.parse(result.stdout) as CheckVerdict;
  // Check speaks of the folder on disk; the run of the bucket's words otherwise.
  const error = verdict.error && {
    ...verdict.error,
    message: inBucketWords(verdict.error.message, folder, drop),
  };
  return { code: result.code, verdict: { ...verdict, error } };
}

describe('hopper check agrees with the run on every case of the bad-input corpus', () => {
  it.each(CASES)('$name', async ({ files, expect: expected, through }) => {
    const drop = uniqueDrop('check');
    const [run, check] = await Promise.all([runsVerdict(drop, files), checksVerdict(drop, files)]);
    expect(check.verdict.error).toEqual(run);
    expect(check.code).toBe(run === null ? 0 : 1);
    if (through === 'run' && expected.trains !== true) {
      // Only the service decides it: check lets it through and says the run decides it.
      expect(run).toBeNull();
      expect(check.verdict.checked_when_the_run_starts.join('\n')).toContain(expected.code);
    }
    if (through === 'validate' && expected.trains !== true) expect(run?.code).toBe(expected.code);
  });

  it('sent nothing to the training service', () => {
    const requests = ENDPOINTS.reduce((sum, endpoint) => sum + (service?.requestCount(endpoint) ?? 0), 0);
    expect(requests).toBe(0);
  });
});
