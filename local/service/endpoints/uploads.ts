/**
 * PUT to a presigned upload URL: checked up front (signature, Content-Length, state), then read
 * as it streams in: hashed, counted and parsed chunk by chunk, never held whole.
 */
import { createHash } from 'node:crypto';
import {
  conflict,
  DataFileReader,
  datasetState,
  invalidRequest,
  notFound,
  ServiceError,
} from '../domain/index.js';
import { answer } from '../faults/index.js';
import { errorReply, type Reply } from '../http/index.js';
import { answerEarly, checkedOrRefused, checkPresigned, type FileRequest } from './presigned.js';

/** Everything that can be refused before reading the body. */
function checkUpload(request: FileRequest) {
  const { state, req, params } = request;
  const now = state.now();
  checkPresigned(request, now);
  const dataset = state.datasets.get(params.dataset ?? '');
  const file = dataset?.files.find((candidate) => candidate.id === params.file);
  if (dataset === undefined || file === undefined) throw notFound('no such file');
  const length = req.headers['content-length'];
  if (length === undefined || req.headers['transfer-encoding'] !== undefined) {
    throw invalidRequest('uploads need a Content-Length (no chunked transfer encoding)');
  }
  const declared = Number(length);
  if (declared !== file.bytes) {
    throw new ServiceError(
      'size_mismatch',
      `Content-Length ${length} differs from the declared ${file.bytes} bytes`,
    );
  }
  if (datasetState(dataset, now).status === 'expired')
    throw new ServiceError('url_expired', 'the dataset has expired');
  if (file.completedAt !== undefined) throw conflict(`file ${file.name} is already complete`);
  return { dataset, file, declared };
}

export async function handleUpload(request: FileRequest): Promise<void> {
  const { req, res, fault, sleep } = request;
  const target = await checkedOrRefused(res, () => checkUpload(request), answerEarly);
  if (target === undefined) return;

  const { dataset, file, declared } = target;
  const reader = new DataFileReader(file.name, dataset.heldOutCount);
  const hash = createHash('sha256');
  let received = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      received += chunk.length;
      hash.update(chunk);
      await reader.write(chunk);
    }
  } catch {
    // The client went away mid-body: nothing to record, nobody to answer.
    return;
  }
  let reply: Reply;
  if (received !== declared) {
    reply = errorReply(new ServiceError('size_mismatch', `received ${received} bytes, declared ${declared}`));
  } else {
    file.upload = { bytes: received, sha256: hash.digest('hex'), read: await reader.end() };
    reply = { status: 200, body: {} };
  }
  await answer(req, res, reply, fault, sleep);
}
