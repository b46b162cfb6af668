/**
 * The local state machine's executions over Step Functions' own API (JSON protocol, on loopback):
 * ListExecutions and DescribeExecution, answered from the executions local mode has run. The
 * `hopper runs` command reads a deployed stack's runs with the SDK's SFNClient; pointed here
 * (AWS_ENDPOINT_URL_SFN, printed by `hopper local`), the same code reads local mode's runs, and so
 * does `aws stepfunctions list-executions`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Execution, ExecutionOutcome, LocalStateMachine } from './state-machine.js';

/** The local state machine's ARN (account and region are placeholders: nothing leaves loopback). */
export const LOCAL_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:hopper-local';
const EXECUTION_ARN_PREFIX = 'arn:aws:states:us-east-1:000000000000:execution:hopper-local:';
/** ListExecutions' page size when the caller gives none, and its ceiling (as in Step Functions). */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;
const MAX_BODY_BYTES = 64 * 1024;

export interface ExecutionsEndpoint {
  readonly url: string;
  readonly stateMachineArn: string;
  close(): Promise<void>;
}

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

export async function startExecutionsEndpoint(machine: LocalStateMachine): Promise<ExecutionsEndpoint> {
  const ended = new Map<string, { outcome: ExecutionOutcome; at: number }>();
  machine.on('done', (execution, outcome) => {
    ended.set(execution.name, { outcome, at: Date.now() });
  });

  const summary = (execution: Execution): Record<string, unknown> => {
    const end = ended.get(execution.name);
    return {
      executionArn: `${EXECUTION_ARN_PREFIX}${execution.name}`,
      stateMachineArn: LOCAL_STATE_MACHINE_ARN,
      name: execution.name,
      status: end?.outcome.status ?? 'RUNNING',
      // The JSON protocol's timestamps are epoch seconds.
      startDate: execution.startedAt / 1000,
      ...(end === undefined ? {} : { stopDate: end.at / 1000 }),
    };
  };

  const answer = (target: string, body: Record<string, unknown>): Answer => {
    if (target === 'AWSStepFunctions.ListExecutions') {
      if (body.stateMachineArn !== LOCAL_STATE_MACHINE_ARN) {
        return error(
          'StateMachineDoesNotExist',
          `State Machine Does Not Exist: '${String(body.stateMachineArn)}'`,
        );
      }
      const size =
        typeof body.maxResults === 'number' && body.maxResults > 0 ? body.maxResults : DEFAULT_PAGE;
      const start = typeof body.nextToken === 'string' ? Number(body.nextToken) : 0;
      const all = machine
        .executions()
        .map(summary)
        .filter((item) => body.statusFilter === undefined || item.status === body.statusFilter)
        .sort((a, b) => Number(b.startDate) - Number(a.startDate));
      const end = start + Math.min(size, MAX_PAGE);
      return {
        status: 200,
        body: { executions: all.slice(start, end), ...(end < all.length ? { nextToken: String(end) } : {}) },
      };
    }
    if (target === 'AWSStepFunctions.DescribeExecution') {
      const arn = String(body.executionArn);
      const execution = arn.startsWith(EXECUTION_ARN_PREFIX)
        ? machine.execution(arn.slice(EXECUTION_ARN_PREFIX.length))
        : undefined;
      if (execution === undefined)
        return error('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
      const outcome = ended.get(execution.name)?.outcome;
      return {
        status: 200,
        body: {
          ...summary(execution),
          input: JSON.stringify(execution.input),
          ...(outcome?.status === 'SUCCEEDED' ? { output: JSON.stringify(outcome.output) } : {}),
          ...(outcome?.status === 'FAILED' ? { error: outcome.error, cause: outcome.cause } : {}),
        },
      };
    }
    return error(
      'UnknownOperationException',
      `local mode answers ListExecutions and DescribeExecution, not ${target}`,
    );
  };

  const server = createServer((req, res) => {
    readBody(req)
      .then((text) => {
        const body = JSON.parse(text === '' ? '{}' : text) as Record<string, unknown>;
        send(res, answer(String(req.headers['x-amz-target']), body));
      })
      .catch((failure: unknown) => {
        send(
          res,
          error('SerializationException', failure instanceof Error ? failure.message : String(failure)),
        );
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    stateMachineArn: LOCAL_STATE_MACHINE_ARN,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

function error(type: string, message: string): Answer {
  return { status: 400, body: { __type: type, message } };
}

function send(res: ServerResponse, { status, body }: Answer): void {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    text += chunk.toString();
    if (text.length > MAX_BODY_BYTES) throw new Error('request body too large');
  }
  return text;
}
