/**
 * A loopback stand-in for an AWS service that speaks the JSON protocol (Secrets Manager, Step
 * Functions), for the few calls that have no local server: it answers each request with what
 * `answer` returns and records what came. The real SDK client talks to it over HTTP.
 */
import { createServer } from 'node:http';
import { listenOnLoopback } from './loopback.js';

export interface AwsJsonRequest {
  /** The X-Amz-Target header: `<Service>.<Operation>`. */
  readonly target: string;
  readonly body: Record<string, unknown>;
}

export interface AwsJsonAnswer {
  readonly status: number;
  /** For an error: `{ __type: '<ErrorName>', message }`. */
  readonly body: Record<string, unknown>;
}

export interface AwsJsonEndpoint {
  readonly url: string;
  readonly requests: AwsJsonRequest[];
  close(): Promise<void>;
}

/** Settings for an SDK client of the endpoint: static credentials, one region. */
export const CLIENT_SETTINGS = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
} as const;

export async function startAwsJsonEndpoint(
  contentType: string,
  answer: (request: AwsJsonRequest) => AwsJsonAnswer,
): Promise<AwsJsonEndpoint> {
  const requests: AwsJsonRequest[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const request = {
        target: String(req.headers['x-amz-target']),
        body: JSON.parse(text === '' ? '{}' : text) as Record<string, unknown>,
      };
      requests.push(request);
      const { status, body } = answer(request);
      res.writeHead(status, { 'content-type': contentType });
      res.end(JSON.stringify(body));
    });
  });
  return { ...(await listenOnLoopback(server)), requests };
}
