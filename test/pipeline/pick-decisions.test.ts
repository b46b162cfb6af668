import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import type { Decisions } from '../../lambdas/core/state/index.js';
import { answersFor, pickDecisionsStep } from '../../lambdas/steps/pick-decisions.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';
import { HOUR, labelAll, MINUTE, rejectionOf, uploadedDataset } from '../client/helpers.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

/** A dataset at pick_decisions (suggested) and a run with `decisions` about to pick. */
async function suggestedDataset(decisions: Decisions, options: Partial<SimulatedServiceOptions> = {}) {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const client = await runtime.service();
  const uploaded = await uploadedDataset(client);
  await client.suggest(uploaded.id);
  const dataset = await client.getDataset(uploaded.id);
  const state = fixtures.withDataset(service, dataset, configOf({ decisions }));
  return { service, client, dataset, run: () => pickDecisionsStep.run(state, stepEnv(runtime)) };
}

/** The decisions the service trained with: labels every example, trains, reads the model's options. */
async function decisionsUsed(
  client: Awaited<ReturnType<typeof suggestedDataset>>['client'],
  datasetId: string,
): Promise<unknown> {
  await labelAll(client, datasetId);
  const model = await client.startTraining(datasetId, 'enc-small');
  return model.options?.decisions;
}

describe('pick_decisions', () => {
  it('"suggested": answers every question with its suggestion', async () => {
    const { client, dataset, run } = await suggestedDataset('suggested');
    expect(await run()).toMatchObject({ id: dataset.id, step: 3, nextAction: 'label_examples' });
    expect(await decisionsUsed(client, dataset.id)).toEqual({ dedupe: 'yes', language: 'en' });
  });

  it('an object overrides the answers it names; the rest stay suggested', async () => {
    const { client, dataset, run } = await suggestedDataset({ language: 'multi' });
    expect(await run()).toMatchObject({ nextAction: 'label_examples' });
    expect(await decisionsUsed(client, dataset.id)).toEqual({ dedupe: 'yes', language: 'multi' });
  });

  it('an unknown question id fails before structuring, naming it and the questions with their choices', async () => {
    const { service, client, dataset, run } = await suggestedDataset({ langauge: 'multi' });
    const error = await rejectionOf(run());
    expect(error).toBeInstanceOf(RunError);
    expect(error).toMatchObject({ code: 'invalid_decision', retryable: false });
    const message = (error as RunError).message;
    expect(message).toContain('"langauge"');
    expect(message).toContain('"dedupe" (yes, no)');
    expect(message).toContain('"language" (en, multi)');
    expect(message).toContain('train.json');
    expect(service.requestCount('structure')).toBe(0);
    expect((await client.getDataset(dataset.id)).next_action).toBe('pick_decisions');
  });

  it('an answer outside the choices fails, naming the question, the answer and the choices', async () => {
    const { service, run } = await suggestedDataset({ dedupe: 'maybe' });
    const error = (await rejectionOf(run())) as RunError;
    expect(error.code).toBe('invalid_decision');
    expect(error.message).toContain('"maybe" is not an answer to "dedupe"');
    expect(error.message).toContain('Remove rows whose text appears more than once?');
    expect(error.message).toContain('choose one of: yes, no');
    expect(service.requestCount('structure')).toBe(0);
  });

  it('names every wrong decision at once', () => {
    const questions = [
      { id: 'dedupe', question: 'Dedupe?', choices: ['yes', 'no'], suggested: 'yes' },
      { id: 'language', question: 'Language?', choices: ['en', 'multi'], suggested: 'en' },
    ];
    let caught: unknown;
    try {
      // `constructor` is on every object's prototype: it must not pass for a question.
      answersFor(questions, { constructor: 'x', dedupe: 'maybe', language: 'multi' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RunError);
    expect((caught as RunError).message).toMatch(
      /no question "constructor".*"maybe" is not an answer to "dedupe"/,
    );
    expect(answersFor(questions, 'suggested')).toEqual([
      { id: 'dedupe', answer: 'yes' },
      { id: 'language', answer: 'en' },
    ]);
    const odd = [{ id: 'constructor', question: 'Odd?', choices: ['a', 'b'], suggested: 'a' }];
    expect(answersFor(odd, {})).toEqual([{ id: 'constructor', answer: 'a' }]);
    expect(answersFor(questions, { language: 'multi' })).toEqual([
      { id: 'dedupe', answer: 'yes' },
      { id: 'language', answer: 'multi' },
    ]);
  });

  it('waits while the service structures', async () => {
    const { run } = await suggestedDataset('suggested', { structuringMs: MINUTE });
    expect(await run()).toMatchObject({ step: 2, status: 'structuring', nextAction: 'wait', waitSeconds: 2 });
  });

  it('a retried invocation after the structure took effect goes on without structuring again', async () => {
    const { service, run } = await suggestedDataset({ dedupe: 'no' }, { structuringMs: MINUTE });
    await run();
    expect(await run()).toMatchObject({ status: 'structuring', nextAction: 'wait' });
    expect(service.requestCount('structure')).toBe(1);
  });

  it('an expired dataset is routed to expired', async () => {
    const { service, run } = await suggestedDataset('suggested');
    service.clock.advance(7 * 24 * HOUR);
    expect(await run()).toMatchObject({ status: 'expired', nextAction: 'expired' });
    expect(service.requestCount('structure')).toBe(0);
  });
});
