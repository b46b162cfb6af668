/**
 * Handlers of the dataset endpoints: create, get, complete, suggest, structure, labels.
 * Order inside each: the dataset (and file/task) in the path -> the body -> the dataset's state.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { isDatasetName } from '../../../lambdas/service-client/contract.js';
import {
  conflict,
  datasetState,
  findTask,
  firstOpenTask,
  invalidRequest,
  labelTask,
  notFound,
  openTaskCount,
  QUESTIONS,
  readDataset,
  ServiceError,
  type Dataset,
} from '../domain/index.js';
import { parseJsonObject, readSmallBody, validate, type Reply } from '../http/index.js';
import { datasetRecord, findDataset, param, type RequestContext } from './context.js';

const fileNameSchema = z
  .string()
  .min(1)
  .max(255)
  .refine((name) => !name.includes('/') && !name.includes('\\'), 'must be a plain file name (no / or \\)')
  // docs/service-contract.md, B2: "no `..`", anywhere in the name.
  .refine((name) => name !== '.' && !name.includes('..'), 'must not be . or contain ..');

const createDatasetSchema = z.strictObject({
  // The contract's count (UTF-16 units); zod's max() would count code points.
  name: z.string().refine(isDatasetName),
  files: z
    .array(
      z.strictObject({
        name: fileNameSchema,
        bytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        content_type: z.string().optional(),
      }),
    )
    .min(1)
    .max(1000),
});

const emptySchema = z.strictObject({});

const structureSchema = z.strictObject({
  questions: z.array(z.strictObject({ id: z.string(), answer: z.string() })).optional(),
});

const labelSchema = z.strictObject({ label: z.string() });

async function jsonBody(ctx: RequestContext, allowEmpty = false): Promise<Record<string, unknown>> {
  return parseJsonObject(await readSmallBody(ctx.req), allowEmpty);
}

/** suggest and structure are allowed once the data is read and until structuring starts (B4, B5). */
function refuseUnlessStructurable(dataset: Dataset, now: number, action: string): void {
  const { nextAction } = datasetState(dataset, now);
  if (nextAction !== 'structure' && nextAction !== 'pick_decisions') {
    throw conflict(`${action} needs next_action structure or pick_decisions, dataset is at ${nextAction}`);
  }
}

export async function createDataset(ctx: RequestContext): Promise<Reply> {
  const body = validate(createDatasetSchema, await jsonBody(ctx), 'body');
  const names = new Set<string>();
  for (const file of body.files) {
    if (names.has(file.name)) throw invalidRequest(`body.files: file name ${file.name} appears twice`);
    names.add(file.name);
  }
  const { state, now } = ctx;
  const dataset: Dataset = {
    id: randomUUID(),
    seq: state.takeSeq(),
    name: body.name,
    createdAt: now,
    expiresAt: now + state.knobs.datasetTtlMs,
    heldOutCount: state.knobs.heldOutCount,
    files: body.files.map((file) => ({ id: randomUUID(), name: file.name, bytes: file.bytes })),
    tasks: [],
  };
  state.datasets.set(dataset.id, dataset);
  return { status: 201, body: datasetRecord(ctx, dataset) };
}

export function getDataset(ctx: RequestContext): Reply {
  return { status: 200, body: datasetRecord(ctx, findDataset(ctx)) };
}

export async function completeFile(ctx: RequestContext): Promise<Reply> {
  const dataset = findDataset(ctx);
  const fileId = param(ctx, 'file');
  const file = dataset.files.find((candidate) => candidate.id === fileId);
  if (file === undefined) throw notFound(`dataset ${dataset.id} has no file ${fileId}`);
  validate(emptySchema, await jsonBody(ctx, true), 'body');
  if (datasetState(dataset, ctx.now).status === 'expired')
    throw conflict(`dataset ${dataset.id} has expired`);
  if (file.completedAt === undefined) {
    if (file.upload === undefined)
      throw new ServiceError('not_uploaded', `file ${file.name} has not been uploaded`);
    file.completedAt = ctx.now;
    if (dataset.files.every((candidate) => candidate.completedAt !== undefined)) {
      const outcome = readDataset(dataset, ctx.state.knobs.unreadable);
      dataset.reading = { endsAt: ctx.now + ctx.state.knobs.readingMs, error: outcome.error };
      dataset.tasks = outcome.tasks;
    }
  }
  return { status: 200, body: datasetRecord(ctx, dataset) };
}

export async function suggest(ctx: RequestContext): Promise<Reply> {
  const dataset = findDataset(ctx);
  validate(emptySchema, await jsonBody(ctx, true), 'body');
  refuseUnlessStructurable(dataset, ctx.now, 'suggest');
  dataset.suggestedAt ??= ctx.now;
  return { status: 200, body: { questions: QUESTIONS } };
}

export async function structure(ctx: RequestContext): Promise<Reply> {
  const dataset = findDataset(ctx);
  const body = validate(structureSchema, await jsonBody(ctx), 'body');
  const answers: Record<string, string> = Object.fromEntries(QUESTIONS.map((q) => [q.id, q.suggested]));
  const answered = new Set<string>();
  for (const { id, answer } of body.questions ?? []) {
    const question = QUESTIONS.find((candidate) => candidate.id === id);
    if (question === undefined) throw invalidRequest(`body.questions: unknown question id ${id}`);
    if (answered.has(id)) throw invalidRequest(`body.questions: question ${id} answered twice`);
    if (!(question.choices as readonly string[]).includes(answer)) {
      throw invalidRequest(`body.questions: answer to ${id} must be one of ${question.choices.join(', ')}`);
    }
    answered.add(id);
    answers[id] = answer;
  }
  refuseUnlessStructurable(dataset, ctx.now, 'structure');
  dataset.structuring = { startedAt: ctx.now, endsAt: ctx.now + ctx.state.knobs.structuringMs, answers };
  return { status: 202, body: datasetRecord(ctx, dataset) };
}

export function nextLabelTask(ctx: RequestContext): Reply {
  const dataset = findDataset(ctx);
  const { status } = datasetState(dataset, ctx.now);
  if (status === 'ready') return { status: 204 };
  if (status !== 'labeling') throw conflict(`dataset is ${status}, not labeling`);
  const first = firstOpenTask(dataset.tasks);
  if (first === undefined) return { status: 204 };
  const body = {
    task: first.task,
    example: { ...first.example },
    choices: ctx.state.knobs.labelChoices,
    remaining: openTaskCount(dataset.tasks),
  };
  return { status: 200, body };
}

export async function submitLabel(ctx: RequestContext): Promise<Reply> {
  const dataset = findDataset(ctx);
  const { label } = validate(labelSchema, await jsonBody(ctx), 'body');
  const { status } = datasetState(dataset, ctx.now);
  if (status !== 'labeling' && status !== 'ready') throw conflict(`dataset is ${status}, not labeling`);
  const taskId = param(ctx, 'task');
  const task = findTask(dataset.tasks, taskId);
  if (task === undefined) throw notFound(`dataset ${dataset.id} has no task ${taskId}`);
  const choices = ctx.state.knobs.labelChoices;
  if (!choices.includes(label)) {
    throw new ServiceError('invalid_label', `label must be one of ${choices.join(', ')}`);
  }
  if (task.label !== undefined && task.label !== label) {
    throw conflict(`task ${taskId} was already labeled ${task.label}`);
  }
  if (task.label === undefined) labelTask(dataset.tasks, task, label, ctx.now);
  return { status: 200, body: { remaining: openTaskCount(dataset.tasks) } };
}
