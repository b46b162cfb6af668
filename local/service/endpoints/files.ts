/**
 * The file server behind presigned URLs (its own port, no API key): PUT /upload/... (uploads.ts)
 * and GET /download/... (downloads.ts). Route -> fault injection -> handler, as on the API.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleDownload } from './downloads.js';
import type { ServiceParts } from './parts.js';
import { answerEarly, DOWNLOAD_ROUTE, UPLOAD_ROUTE } from './presigned.js';
import { serve, type Route } from './serve.js';
import { handleUpload } from './uploads.js';

const ROUTES: readonly Route<'fileUpload' | 'fileDownload'>[] = [
  { endpoint: 'fileUpload', method: 'PUT', template: UPLOAD_ROUTE },
  { endpoint: 'fileDownload', method: 'GET', template: DOWNLOAD_ROUTE },
];

export function createFileHandler(parts: ServiceParts): (req: IncomingMessage, res: ServerResponse) => void {
  // An upload's body is still unread when an answer comes first: answerEarly closes the connection.
  return serve(parts, ROUTES, answerEarly, async (admitted) => {
    const request = { ...parts, ...admitted };
    await (admitted.endpoint === 'fileUpload'
      ? parts.uploadsInFlight.during(() => handleUpload(request))
      : handleDownload(request));
  });
}
