/**
 * What the upload and download handlers of the file server share: the request they receive and
 * the checks every presigned URL goes through.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidRequest, ServiceError } from '../domain/errors.js';
import { sendReply, type Reply } from '../http/http.js';
import type { FaultRule } from '../options.js';
import type { Sleep } from '../faults/pipeline.js';
import type { ServiceState } from '../domain/state.js';

export interface FileRequest {
  state: ServiceState;
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Named path segments. */
  params: Record<string, string>;
  /** The fault that fired for this request, if any (drop and error kinds are handled before). */
  fault: FaultRule | undefined;
  sleep: Sleep;
}

/** Presigned URLs are called without the API key; the signature is the credential. */
export function checkPresigned({ state, req, url }: FileRequest, now: number): void {
  if (req.headers.authorization !== undefined) {
    throw invalidRequest('presigned URLs take no Authorization header');
  }
  const { searchParams } = url;
  const expires = state.verifyPresigned(
    url.pathname,
    searchParams.get('expires'),
    searchParams.get('signature'),
  );
  if (expires === undefined) throw new ServiceError('url_expired', 'the URL signature is not valid');
  if (now >= expires) throw new ServiceError('url_expired', 'the URL has expired');
}

/**
 * Answers without reading the request body: the connection closes after the answer, so a large
 * upload is not read just to be thrown away.
 */
export function answerEarly(res: ServerResponse, reply: Reply): void {
  sendReply(res, { ...reply, headers: { ...reply.headers, Connection: 'close' } });
}
