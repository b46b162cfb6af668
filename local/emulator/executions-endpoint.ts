/**
 * The local state machine's executions over Step Functions' own API (JSON protocol, on loopback):
 * StartExecution (under Step Functions' rule for a name seen before, as LocalStateMachine keeps
 * it), ListExecutions and DescribeExecution, answered from the executions local mode has run. The
 * `hopper runs` command reads a deployed stack's runs with the SDK's SFNClient; pointed here
 * (AWS_ENDPOINT_URL_SFN, printed by `hopper local`), the same code reads local mode's runs, the
 * trigger's sfnExecutionStarter starts one, and so does `aws stepfunctions start-execution`.
 */
import { createServer, type ServerResponse } from 'node:http';
import { messageOf } from '../../lambdas/core/errors/index.js';
import { executionArnOf } from '../../lambdas/core/state/index.js';
import { EXECUTION_ALREADY_EXISTS, type ExecutionInput } from '../../lambdas/trigger/start-execution.js';
import {
  LOCAL_STATE_MACHINE_ARN,
  type Execution,
  type ExecutionOutcome,
  type LocalStateMachine,
} from './state-machine.js';
import { listen, readSmallBody, stop } from '../service/http/index.js';

const EXECUTION_ARN_PREFIX = executionArnOf(LOCAL_STATE_MACHINE_ARN, '');
/** What Step Functions allows in an execution name (and its length). */
const EXECUTION_NAME = /^[A-Za-z0-9_-]{1,80}$/;
/** ListExecutions' page size when the caller gives none, and its ceiling (as in Step Functions). */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;
const MAX_BODY_BYTES = 64 * 1024;

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

/** When each execution ended, and how: what ListExecutions and DescribeExecution answer from. */
type Ended = ReadonlyMap<string, { readonly outcome: ExecutionOutcome; readonly at: number }>;

/** The endpoint, on loopback, answering for `machine`. */
export async function startExecutionsEndpoint(
  machine: LocalStateMachine,
): Promise<{ url: string; stateMachineArn: string; close(): Promise<void> }> {
  const ended = new Map<string, { outcome: ExecutionOutcome; at: number }>();
  machine.on('done', (execution, outcome) => {
    ended.set(execution.name, { outcome, at: Date.now() });
  });

  const answer = (target: string, body: Record<string, unknown>): Answer => {
    if (target === 'AWSStepFunctions.DescribeExecution') return describeExecution(machine, ended, body);
    const start = target === 'AWSStepFunctions.StartExecution';
    if (!start && target !== 'AWSStepFunctions.ListExecutions') {
      return error(
        'UnknownOperationException',
        `local mode answers StartExecution, ListExecutions and DescribeExecution, not ${target}`,
      );
    }
    if (body.stateMachineArn !== LOCAL_STATE_MACHINE_ARN) {
      const message = `State Machine Does Not Exist: '${String(body.stateMachineArn)}'`;
      return error('StateMachineDoesNotExist', message);
    }
    return start ? startExecution(machine, body) : listExecutions(machine, ended, body);
  };

  const server = createServer((req, res) => {
    readSmallBody(req, MAX_BODY_BYTES)
      .then((raw) => {
        const text = raw.toString();
        const body = JSON.parse(text === '' ? '{}' : text) as Record<string, unknown>;
        send(res, answer(String(req.headers['x-amz-target']), body));
      })
      .catch((failure: unknown) => {
        send(res, error('SerializationException', messageOf(failure)));
      });
  });
  const url = await listen(server, '127.0.0.1', 0);
  return { url, stateMachineArn: LOCAL_STATE_MACHINE_ARN, close: () => stop(server) };
}

function summary(execution: Execution, ended: Ended): Record<string, unknown> {
  const end = ended.get(execution.name);
  return {
    executionArn: execution.arn,
    stateMachineArn: LOCAL_STATE_MACHINE_ARN,
    name: execution.name,
    status: end?.outcome.status ?? 'RUNNING',
    // The JSON protocol's timestamps are epoch seconds.
    startDate: execution.startedAt / 1000,
    ...(end === undefined ? {} : { stopDate: end.at / 1000 }),
  };
}

function listExecutions(machine: LocalStateMachine, ended: Ended, body: Record<string, unknown>): Answer {
  const size = typeof body.maxResults === 'number' && body.maxResults > 0 ? body.maxResults : DEFAULT_PAGE;
  const start = typeof body.nextToken === 'string' ? Number(body.nextToken) : 0;
  const all = machine
    .executions()
    .map((execution) => summary(execution, ended))
    .filter((item) => body.statusFilter === undefined || item.status === body.statusFilter)
    .sort((a, b) => Number(b.startDate) - Number(a.startDate));
  const end = start + Math.min(size, MAX_PAGE);
  return {
    status: 200,
    body: { executions: all.slice(start, end), ...(end < all.length ? { nextToken: String(end) } : {}) },
  };
}

function describeExecution(machine: LocalStateMachine, ended: Ended, body: Record<string, unknown>): Answer {
  const arn = String(body.executionArn);
  const execution = arn.startsWith(EXECUTION_ARN_PREFIX)
    ? machine.execution(arn.slice(EXECUTION_ARN_PREFIX.length))
    : undefined;
  if (execution === undefined) return error('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
  const outcome = ended.get(execution.name)?.outcome;
  return {
    status: 200,
    body: {
      ...summary(execution, ended),
      input: JSON.stringify(execution.input),
      ...(outcome?.status === 'SUCCEEDED' ? { output: JSON.stringify(outcome.output) } : {}),
      ...(outcome !== undefined && 'error' in outcome ? { error: outcome.error, cause: outcome.cause } : {}),
    },
  };
}

function startExecution(machine: LocalStateMachine, body: Record<string, unknown>): Answer {
  const name = body.name;
  if (typeof name !== 'string' || !EXECUTION_NAME.test(name)) {
    return error('InvalidName', `Invalid Name: '${String(name)}' (1 to 80 of A-Z, a-z, 0-9, - and _)`);
  }
  const inputText = typeof body.input === 'string' ? body.input : '{}';
  let input: unknown;
  try {
    input = JSON.parse(inputText);
  } catch {
    return error('InvalidExecutionInput', 'Invalid State Machine Execution Input: not JSON');
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return error('InvalidExecutionInput', 'Invalid State Machine Execution Input: not a JSON object');
  }
  const started = machine.startExecution(name, input as ExecutionInput, inputText);
  if (started.outcome === 'already_exists') {
    return error(EXECUTION_ALREADY_EXISTS, `Execution Already Exists: '${EXECUTION_ARN_PREFIX}${name}'`);
  }
  // The JSON protocol's timestamps are epoch seconds.
  return {
    status: 200,
    body: { executionArn: started.executionArn, startDate: started.startDate.getTime() / 1000 },
  };
}

function error(type: string, message: string): Answer {
  return { status: 400, body: { __type: type, message } };
}

function send(res: ServerResponse, { status, body }: Answer): void {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
  res.end(JSON.stringify(body));
}
