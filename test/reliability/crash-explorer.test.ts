/**
 * The crash explorer's sample (the whole set: `npm run crash-explorer`, docs/reliability.md,
 * "Crash-point explorer"): a few points of the drop's clean run, each tried as the whole set tries
 * it, chosen among those that hold today. Each must be reached and hold every invariant: at most 1
 * credit per distinct train.json, no dataset or model at the service that no status or run record
 * names, every done model in the bucket byte for byte, the final status and the advice true.
 * One point is tried with a real kill -9 of `hopper local`. The checks themselves are shown to
 * catch what they are for on made-up worlds.
 */
import { describe, expect, it } from 'vitest';
import { EXPLORED_DROP, lineOf, trialsOf } from './crash-explorer/explore.js';
import { creditsWithin, interruptedAdviceTrue, orphans, type World } from './crash-explorer/invariants.js';
import { processKillTrial } from './crash-explorer/process-kill.js';
import { recordCleanRun, runTrial, type Trial } from './crash-explorer/trials.js';
import { pointOf } from './crash-explorer/watch.js';

/** Points that hold on the code as it stands (the whole set's figures list those that do not). */
const SAMPLE: readonly Trial[] = [
  // Killed as the run's Started event goes out: the trigger's first status names the run, so the
  // restart finds it and says how to start it again, rather than "no run".
  { kind: 'kill', point: 'ValidateDrop#1 PutObject status/.events/{run}/started#1' },
  { kind: 'kill', point: 'UploadFiles#1 POST /v1/datasets/{id}/files/{id}/complete#1' },
  { kind: 'kill', point: 'LabelExamples#1 POST /v1/datasets/{id}/labels/{id}#2' },
  // A lost answer to the create: the next invocation finds the dataset by its name (no orphan).
  { kind: 'kill', point: 'CreateDataset#1 POST /v1/datasets#1' },
  { kind: 'garble', point: 'PollModel#1 GET /v1/models/{id}#1' },
  // Killed after the copy: the advice names the copied model, not "resumes it from its dataset".
  { kind: 'kill', point: 'Report#1 PutObject models/crash/current.json#1' },
  // A changed train.json while the older run labels: the older run reads train.json's etag before
  // it pays and stops, rather than learning of the newer run once that run's drop settled.
  { kind: 'redrop-changed', point: 'LabelExamples#1 GET /v1/datasets/{id}/labels/next#1' },
];

describe('the crash explorer, a sample of its points', { timeout: 120_000 }, () => {
  it('records the clean run, whose points include every sampled one; each sampled point holds', async () => {
    const effects = await recordCleanRun(EXPLORED_DROP);
    const trials = trialsOf(effects);
    expect(effects.map(pointOf)).toEqual(
      expect.arrayContaining(['StartTraining#1 POST /v1/datasets/{id}/models#1']),
    );
    for (const trial of SAMPLE) expect(trials).toContainEqual(trial);
    const results = [];
    for (const trial of SAMPLE) results.push(await runTrial(EXPLORED_DROP, trial));
    const lines = results.map(lineOf);
    expect(
      results.map((result) => ({ reached: result.reached, violations: result.violations })),
      lines.join('\n'),
    ).toEqual(SAMPLE.map(() => ({ reached: true, violations: [] })));
  });

  it('a real kill -9 of hopper local as the first label task comes back: restarted, the advice followed, it holds', async () => {
    const result = await processKillTrial(EXPLORED_DROP, {
      request: 'GET /v1/datasets/{id}/labels/next',
      ordinal: 1,
    });
    expect({ reached: result.reached, violations: result.violations }, lineOf(result)).toEqual({
      reached: true,
      violations: [],
    });
  });
});

describe('the invariants catch what they are for', () => {
  const world = (changes: Partial<World>): World => ({
    datasets: [{ id: 'ds-1', status: 'ready' }],
    models: [{ id: 'm-1', dataset_id: 'ds-1', status: 'done', next_action: 'download', onnx_bytes: 10 }],
    creditsSpent: 1,
    status: null,
    reports: '{"dataset_id":"ds-1","model_id":"m-1"}',
    ...changes,
  });

  it('a dataset or model no status names is an orphan', () => {
    expect(orphans(world({}))).toEqual([]);
    expect(orphans(world({ reports: '{"dataset_id":"ds-1"}' }))).toEqual([
      'orphan: model m-1 (done) is named by no status, run record or model.json',
    ]);
  });

  it('a second credit for one train.json breaks the credit invariant', () => {
    expect(creditsWithin(world({}), 1, 'one train.json')).toEqual([]);
    expect(creditsWithin(world({ creditsSpent: 2 }), 1, 'one train.json')).toEqual([
      'credits: 2 spent, at most 1 allowed (one train.json)',
    ]);
  });

  it('"before it had a dataset" while a dataset no status names exists is untrue advice', () => {
    const status = {
      state: 'interrupted',
      model: null,
      error: {
        code: 'interrupted',
        message:
          "local mode stopped while this run was at create_dataset, and nothing runs it now: hopper retry crash starts it again from the drop's files, which are still in the bucket",
      },
    } as unknown as World['status'];
    expect(interruptedAdviceTrue(world({ status }), 'crash')).toEqual([]);
    expect(interruptedAdviceTrue(world({ status, reports: '{"model_id":"m-1"}' }), 'crash')).toEqual([
      'advice: says "interrupted before it had a dataset", but dataset ds-1 exists at the service',
    ]);
  });
});
