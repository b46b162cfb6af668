/**
 * The file server behind presigned URLs (its own port, no API key): PUT /upload/... (uploads.ts)
 * and GET /download/... (downloads.ts). Route -> fault injection -> handler, as on the API.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleDownload } from './downloads.js';
import { notFound } from '../domain/errors.js';
import { errorReply, matchPath, requestUrl } from '../http/http.js';
import { admitRequest, guarded, type Sleep } from '../faults/pipeline.js';
import { answerEarly } from './presigned.js';
import type { ServiceState } from '../domain/state.js';
import { handleUpload } from './uploads.js';

export function createFileHandler(
  state: ServiceState,
  sleep: Sleep,
): (req: IncomingMessage, res: ServerResponse) => void {
  return guarded((req, res) => handleFileRequest(state, sleep, req, res));
}

async function handleFileRequest(
  state: ServiceState,
  sleep: Sleep,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = requestUrl(req);
  const path = url?.pathname ?? '';
  const upload = req.method === 'PUT' ? matchPath('/upload/:datasetId/:fileId', path) : undefined;
  const download = req.method === 'GET' ? matchPath('/download/:modelId', path) : undefined;
  const params = upload ?? download;
  if (url === undefined || params === undefined) {
    answerEarly(res, errorReply(notFound(`no route ${req.method ?? ''} ${path}`)));
    return;
  }
  const endpoint = upload !== undefined ? 'fileUpload' : 'fileDownload';
  // An upload's body is still unread here: answerEarly closes the connection after the answer.
  const admission = admitRequest(state, endpoint, req, (reply) => {
    answerEarly(res, reply);
  });
  if (admission.answered) return;
  const request = { state, req, res, url, params, fault: admission.fault, sleep };
  await (endpoint === 'fileUpload'
    ? state.uploadsInFlight.during(() => handleUpload(request))
    : handleDownload(request));
}
