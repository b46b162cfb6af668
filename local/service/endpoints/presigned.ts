/**
 * What the upload and download handlers of the file server share: the request they receive,
 * the paths of presigned URLs and the checks every presigned URL goes through.
 */
import type { ServerResponse } from 'node:http';
import { invalidRequest, ServiceError } from '../domain/index.js';
import { asServiceError, errorReply, sendReply, type Reply } from '../http/index.js';
import type { Admitted, ServiceParts } from './parts.js';

export const UPLOAD_ROUTE = '/upload/{dataset}/{file}';
export const DOWNLOAD_ROUTE = '/download/{model}';

export const uploadPath = (datasetId: string, fileId: string): string => `/upload/${datasetId}/${fileId}`;
export const downloadPath = (modelId: string): string => `/download/${modelId}`;

/** A request to the file server, with the running service's parts. */
export type FileRequest = ServiceParts & Admitted<'fileUpload' | 'fileDownload'>;

/** Presigned URLs are called without the API key; the signature is the credential. */
export function checkPresigned({ signer, req, url }: FileRequest, now: number): void {
  if (req.headers.authorization !== undefined) {
    throw invalidRequest('presigned URLs take no Authorization header');
  }
  const expires = signer.presignedExpiry(url);
  if (expires === undefined) throw new ServiceError('url_expired', 'the URL signature is not valid');
  if (now >= expires) throw new ServiceError('url_expired', 'the URL has expired');
}

/** What `check` finds before the body, or undefined once `refuse` has answered what it threw on `res`. */
export async function checkedOrRefused<T>(
  res: ServerResponse,
  check: () => T,
  refuse: (res: ServerResponse, reply: Reply) => void | Promise<void>,
): Promise<T | undefined> {
  try {
    return check();
  } catch (error) {
    await refuse(res, errorReply(asServiceError(error)));
    return undefined;
  }
}

/**
 * Answers without reading the request body: the connection closes after the answer, so a large
 * upload is not read just to be thrown away.
 */
export function answerEarly(res: ServerResponse, reply: Reply): void {
  sendReply(res, { ...reply, headers: { ...reply.headers, Connection: 'close' } });
}
