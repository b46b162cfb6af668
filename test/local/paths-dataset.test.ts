/**
 * Every path of a dataset through local mode, end to end: files put into the local S3 bucket
 * under inbox/<drop>/ (train.json last), the S3 event starting the run through the trigger, the
 * synthesized state machine with the real handlers, the simulated service over HTTP. No mocks:
 * each test looks at what a user sees (the outcome, status/<drop>.json, models/<drop>/) and at
 * what the service saw (requests, credits), and at the route the execution took.
 * The model's paths (training, copy, triggers) are in paths-model.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { dropAndRun, type FinishedRun, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { expectFailed, expectSaved, type ModelJson } from '../helpers/local-runs.js';
import { REVIEWS_CSV, reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** The simulated service's questions and their suggested answers (local/service/domain/datasets.ts). */
const SUGGESTED = { dedupe: 'yes', language: 'en' };

/** The run succeeded with its first training and nothing is lost; one credit spent. */
async function expectTrained(local: LocalMode, run: FinishedRun): Promise<ModelJson> {
  const { record } = await expectSaved(local, run);
  expect(run.status?.attempts).toBe(1);
  expect(local.simulated?.credits()).toBe(9);
  return record;
}

describe('structuring decisions', () => {
  it('"{}" structures without questions (no suggest) and trains: model.onnx and model.json in S3, one credit', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(local, 'plain', reviewsDrop());

    await expectTrained(local, run);
    const route = statesEntered(run.events);
    expect(route).toContain('Structure');
    expect(route).not.toContain('PickDecisions');
    expect(local.simulated?.requestCount('suggest')).toBe(0);
    expect(local.simulated?.requestCount('structure')).toBe(1);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
  });

  it('"suggested" asks for suggestions and structures with exactly the suggested answers', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(local, 'suggested', reviewsDrop('{"decisions": "suggested"}'));

    const record = await expectTrained(local, run);
    expect(statesEntered(run.events)).toEqual(expect.arrayContaining(['Structure', 'PickDecisions']));
    expect(local.simulated?.requestCount('suggest')).toBe(1);
    expect(local.simulated?.requestCount('structure')).toBe(1);
    // The service records the answers structure got on the model it trains.
    expect(record.model.options.decisions).toEqual(SUGGESTED);
  });

  it('an explicit answer overrides the suggestion and reaches the service; the other question keeps its suggestion', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(local, 'explicit', reviewsDrop('{"decisions": {"language": "multi"}}'));

    const record = await expectTrained(local, run);
    expect(statesEntered(run.events)).toContain('PickDecisions');
    expect(local.simulated?.requestCount('suggest')).toBe(1);
    expect(record.model.options.decisions).toEqual({ ...SUGGESTED, language: 'multi' });
  });

  it('an answer outside the choices and an unknown question fail with invalid_decision naming both, nothing structured or trained', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(
      local,
      'bad-decision',
      reviewsDrop('{"decisions": {"language": "klingon", "colour": "red"}}'),
    );

    const status = await expectFailed(local, run, 'invalid_decision');
    expect(status).toMatchObject({ step: 2, next_action: 'pick_decisions', attempts: 0 });
    const message = status.error?.message ?? '';
    expect(message).toContain('"klingon" is not an answer to "language"');
    expect(message).toContain('choose one of: en, multi');
    expect(message).toContain('there is no question "colour"');
    expect(message).toContain('"dedupe" (yes, no)');
    expect(message).toContain('Fix "decisions" in train.json');
    expect(statesEntered(run.events)).toContain('PickDecisions');
    expect(local.simulated?.requestCount('structure')).toBe(0);
    expect(local.simulated?.requestCount('startTraining')).toBe(0);
    expect(local.simulated?.credits()).toBe(10);
  });
});

describe('held-out examples', () => {
  it('labels by id answer every held-out example (labelled = heldOutCount) and the run trains', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 3 } });
    const run = await dropAndRun(local, 'labels-by-id', reviewsDrop());

    const record = await expectTrained(local, run);
    expect(run.status?.labelled).toBe(3);
    expect(record.run.labelled).toBe(3);
    expect(statesEntered(run.events)).toContain('LabelExamples');
    expect(local.simulated?.requestCount('submitLabel')).toBe(3);
  });

  it('labels by original text match examples the service masked ([EMAIL], [PHONE]) and the run trains', async () => {
    // No id column: the examples are named "<file>#<row>" and can only be matched by text. Every
    // row holds an e-mail address or a phone number and every row is held out, so every example
    // the service shows has a placeholder where the labels file has the original.
    const rows = [
      'Write to anna.berg@example.com, the desk lamp is excellent.',
      'Call me at +1 415-555-0100 about the broken rain jacket.',
      'Refund please: (020) 7946 0958 or bob.smith@example.org',
      'It does the job, reach me on 555 123 4567 if you want more.',
    ];
    const data = ['text', ...rows.map((row) => JSON.stringify(row))].join('\n');
    // Another order, and white space the match normalises.
    const labels = [
      'text,label',
      `${JSON.stringify(rows[3])},neutral`,
      `"  Call me at  +1 415-555-0100 about the broken rain jacket.",negative`,
      `${JSON.stringify(rows[0])},positive`,
      `${JSON.stringify(rows[2])},negative`,
    ].join('\n');
    const local = await fixture.start({ simulated: { heldOutCount: rows.length } });
    const run = await dropAndRun(local, 'labels-by-text', {
      'contacts.csv': data,
      'labels.csv': labels,
      'train.json': '{}',
    });

    await expectTrained(local, run);
    expect(run.status?.labelled).toBe(rows.length);
    expect(local.simulated?.requestCount('submitLabel')).toBe(rows.length);
  });

  it('with no held-out examples the run never enters LabelExamples and trains without a labels file', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0 } });
    const run = await dropAndRun(local, 'no-held-out', { 'reviews.csv': REVIEWS_CSV, 'train.json': '{}' });

    await expectTrained(local, run);
    expect(run.status?.labelled).toBe(0);
    expect(statesEntered(run.events)).not.toContain('LabelExamples');
    expect(local.simulated?.requestCount('nextLabelTask')).toBe(0);
  });
});

describe('datasets the run cannot go on with', () => {
  it('unreadable data (start_over) fails with dataset_unreadable and the service reason; no training, no credit', async () => {
    const local = await fixture.start({ simulated: { unreadable: true } });
    const run = await dropAndRun(local, 'unreadable', reviewsDrop());

    const status = await expectFailed(local, run, 'dataset_unreadable');
    expect(status).toMatchObject({ step: 1, next_action: 'start_over', attempts: 0, model_id: null });
    expect(status.error?.message).toContain('reviews.csv: unreadable (simulated)');
    expect(status.error?.message).toContain('Fix the file and drop the folder again');
    expect(statesEntered(run.events)).toContain('DatasetUnreadable');
    expect(local.simulated?.requestCount('structure')).toBe(0);
    expect(local.simulated?.requestCount('startTraining')).toBe(0);
    expect(local.simulated?.credits()).toBe(10);
  });

  it('a dataset that expires before training fails with dataset_expired; no training, no credit', async () => {
    // Reading outlasts the data's lifetime, so the dataset can only leave reading by expiring;
    // the service clock jumps past the expiry once the run waits on the reading. Nothing depends
    // on how long the upload takes.
    const hour = 60 * 60 * 1000;
    const local = await fixture.start({ simulated: { datasetTtlMs: hour, readingMs: 2 * hour } });
    let advanced = false;
    local.stateMachine.on('event', (_execution, event) => {
      if (!advanced && event.type === 'StateEntered' && event.state.name === 'WaitForDataset') {
        advanced = true;
        local.simulated?.clock.advance(hour);
      }
    });
    const run = await dropAndRun(local, 'expired', reviewsDrop());

    const status = await expectFailed(local, run, 'dataset_expired');
    expect(status).toMatchObject({ step: 1, next_action: 'expired', attempts: 0 });
    expect(status.error?.message).toContain(`dataset ${status.dataset_id ?? ''} expired`);
    expect(status.error?.message).toContain('drop the folder again');
    expect(statesEntered(run.events)).toContain('DatasetExpired');
    expect(local.simulated?.requestCount('startTraining')).toBe(0);
    expect(local.simulated?.credits()).toBe(10);
  });

  it('a next_action Hopper does not know fails with unsupported_next_action naming it, before any credit is spent', async () => {
    const local = await fixture.start({
      simulated: { heldOutCount: 0, renameNextActions: { start_training: 'celebrate' } },
    });
    const run = await dropAndRun(local, 'celebrate', { 'reviews.csv': REVIEWS_CSV, 'train.json': '{}' });

    // The service client refuses the unknown value when it reads the record (PollDataset), so
    // status.json still shows the last record it understood; the message names the value.
    const status = await expectFailed(local, run, 'unsupported_next_action');
    expect(status).toMatchObject({ model_id: null, attempts: 0 });
    expect(status.error?.message).toContain('celebrate');
    expect(status.error?.message).toContain('upgrade Hopper');
    expect(statesEntered(run.events)).not.toContain('StartTraining');
    expect(local.simulated?.requestCount('startTraining')).toBe(0);
    expect(local.simulated?.credits()).toBe(10);
  });
});

describe('a bad drop', () => {
  it.each([
    {
      what: 'a train.json with a misspelt field',
      files: { 'train.json': '{"maxAttempt": 2}' },
      code: 'invalid_train_json',
      names: 'did you mean "maxAttempts"?',
    },
    {
      what: 'a train.json naming a file the drop lacks',
      files: { 'train.json': '{"files": ["reviews.csv", "more.csv"]}' },
      code: 'missing_file',
      names: 'more.csv',
    },
  ])(
    '$what fails with $code in status.json and as the FAILED outcome, before the service is asked',
    async (bad) => {
      const local = await fixture.start();
      const run = await dropAndRun(local, 'bad-drop', { 'reviews.csv': REVIEWS_CSV, ...bad.files });

      const status = await expectFailed(local, run, bad.code);
      expect(status).toMatchObject({ step: null, next_action: null, dataset_id: null });
      expect(status.error?.message).toContain(bad.names);
      expect(statesEntered(run.events)).toEqual(['ValidateDrop', 'Report', 'RunSucceeded', 'RunFailed']);
      expect(local.simulated?.requestCount('createDataset')).toBe(0);
      expect(local.simulated?.credits()).toBe(10);
    },
  );
});
