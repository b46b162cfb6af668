/**
 * pick_decisions: answers the questions the service suggested. Every question takes its
 * suggested answer unless train.json's `decisions` object overrides it; overrides are checked
 * against the questions before anything is sent, so a typo fails with the choices on offer.
 */
import type { Question, StructureAnswer } from '../service-client/index.js';
import { RunError, noQuestionsMessage, invalidDecisionMessage } from '../core/errors/index.js';
import { defineStep } from '../runtime/index.js';
import { datasetSlot } from '../core/state/index.js';
import type { Decisions } from '../core/state/index.js';
import { orWhereItIsNow } from './structure.js';

export const pickDecisionsStep = defineStep('pick_decisions', async ({ config, dataset }, env) => {
  const client = await env.runtime.service();
  const record = await client.getDataset(dataset.id);
  // Moved on already (a retried invocation whose structure took effect, or expiry): route on it.
  if (record.next_action !== 'pick_decisions') return datasetSlot(record, dataset, env.runtime.now());
  if (record.questions === null) throw new RunError('service_error', noQuestionsMessage(record.id));
  const answers = answersFor(record.questions, config.decisions);
  const structured = await orWhereItIsNow(client, dataset.id, () => client.structure(dataset.id, answers));
  return datasetSlot(structured, dataset, env.runtime.now());
});

/**
 * One answer per question: the suggested one, or train.json's when `decisions` is an object.
 * Throws invalid_decision listing every override the questions do not allow.
 */
export function answersFor(questions: readonly Question[], decisions: Decisions): StructureAnswer[] {
  const overrides: Readonly<Record<string, string>> = typeof decisions === 'object' ? decisions : {};
  const problems: string[] = [];
  for (const [id, answer] of Object.entries(overrides)) {
    const question = questions.find((candidate) => candidate.id === id);
    if (question === undefined) {
      problems.push(`there is no question "${id}"`);
    } else if (!question.choices.includes(answer)) {
      problems.push(
        `"${answer}" is not an answer to "${id}" (${question.question}); choose one of: ${question.choices.join(', ')}`,
      );
    }
  }
  if (problems.length > 0) {
    const asked = questions.map((question) => `"${question.id}" (${question.choices.join(', ')})`).join(', ');
    throw new RunError('invalid_decision', invalidDecisionMessage(problems, asked));
  }
  // Own keys only: a question id such as "constructor" must not read Object.prototype.
  const overrideOf = (id: string) => (Object.hasOwn(overrides, id) ? overrides[id] : undefined);
  return questions.map((question) => ({
    id: question.id,
    answer: overrideOf(question.id) ?? question.suggested,
  }));
}
