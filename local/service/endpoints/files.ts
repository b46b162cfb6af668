/**
 * The file server behind presigned URLs (its own port, no API key): PUT /upload/... (uploads.ts)
 * and GET /download/... (downloads.ts). Route -> fault injection -> handler, as on the API.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { notFound } from '../domain/index.js';
import { errorReply, guarded, matchPath, requestUrl } from '../http/index.js';
import type { ServiceParts } from './context.js';
import { handleDownload } from './downloads.js';
import { answerEarly, DOWNLOAD_ROUTE, UPLOAD_ROUTE } from './presigned.js';
import { handleUpload } from './uploads.js';

export function createFileHandler(parts: ServiceParts): (req: IncomingMessage, res: ServerResponse) => void {
  return guarded((req, res) => handleFileRequest(parts, req, res));
}

async function handleFileRequest(
  parts: ServiceParts,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = requestUrl(req);
  const path = url?.pathname ?? '';
  const upload = req.method === 'PUT' ? matchPath(UPLOAD_ROUTE, path) : undefined;
  const download = req.method === 'GET' ? matchPath(DOWNLOAD_ROUTE, path) : undefined;
  const params = upload ?? download;
  if (url === undefined || params === undefined) {
    answerEarly(res, errorReply(notFound(`no route ${req.method ?? ''} ${path}`)));
    return;
  }
  const endpoint = upload !== undefined ? 'fileUpload' : 'fileDownload';
  // An upload's body is still unread here: answerEarly closes the connection after the answer.
  const admission = parts.gate.admit(endpoint, req, (reply) => {
    answerEarly(res, reply);
  });
  if (admission.answered) return;
  const { state, signer, sleep } = parts;
  const request = { state, signer, req, res, url, params, fault: admission.fault, sleep };
  await (endpoint === 'fileUpload'
    ? parts.uploadsInFlight.during(() => handleUpload(request))
    : handleDownload(request));
}
