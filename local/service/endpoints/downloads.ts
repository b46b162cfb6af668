/**
 * GET of a presigned download URL: the model file, generated from the model id as the client
 * reads it (64 KiB chunks, waiting on 'drain'), whole or by Range; a 'cut' fault stops it short,
 * a 'trickle' sends it a byte at a time.
 */
import type { ServerResponse } from 'node:http';
import {
  assertFilesServable,
  MODEL_CHUNK_BYTES,
  modelBytesAt,
  notFound,
  ServiceError,
  type Model,
} from '../domain/index.js';
import { answer, beforeAnswer, FAULT_DEFAULTS, trickle } from '../faults/index.js';
import { writeChunks } from '../http/index.js';
import { checkedOrRefused, checkPresigned, type FileRequest } from './presigned.js';

/** Bytes [start, end) of the file. */
interface ByteRange {
  start: number;
  end: number;
}

/** `bytes=N-`, `bytes=N-M` or `bytes=-N` (suffix); anything else cannot be satisfied. */
export function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return 'unsatisfiable';
  const [, first = '', last = ''] = match;
  if (first === '') {
    const suffix = Number(last);
    if (last === '' || suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size };
  }
  const start = Number(first);
  const end = last === '' ? size : Math.min(Number(last) + 1, size);
  if (start >= size || end <= start) return 'unsatisfiable';
  return { start, end };
}

/** Everything that can be refused before the body starts. */
function checkDownload(request: FileRequest): { model: Model; range: ByteRange | undefined } {
  const { state, req, params } = request;
  const now = state.now();
  checkPresigned(request, now);
  const model = state.models.get(params.model ?? '');
  if (model === undefined) throw notFound('no such model');
  assertFilesServable(model, now);
  const header = req.headers.range;
  if (header === undefined) return { model, range: undefined };
  const range = parseRange(header, model.onnxBytes);
  if (range === 'unsatisfiable') {
    // 416 with invalid_request: the contract has no code of its own for a bad Range.
    throw new ServiceError('invalid_request', `cannot serve ${header} of ${model.onnxBytes} bytes`, {
      status: 416,
      headers: { 'Content-Range': `bytes */${model.onnxBytes}` },
    });
  }
  return { model, range };
}

export async function handleDownload(request: FileRequest): Promise<void> {
  const { req, res, fault, sleep } = request;
  const checked = await checkedOrRefused(
    res,
    () => checkDownload(request),
    (_, reply) => answer(req, res, reply, fault, sleep),
  );
  if (checked === undefined) return;
  if (!(await beforeAnswer(req, fault, sleep)) || res.destroyed) return;

  const { model, range } = checked;
  // A 'wrong_bytes' misbehaviour serves a file one byte longer than the record's onnx_bytes.
  const size = model.onnxBytes + (fault?.kind === 'wrong_bytes' ? 1 : 0);
  const { start, end } = range ?? { start: 0, end: size };
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/octet-stream',
    'Content-Length': end - start,
    'Accept-Ranges': 'bytes',
  };
  if (range !== undefined) headers['Content-Range'] = `bytes ${start}-${end - 1}/${size}`;
  res.writeHead(range === undefined ? 200 : 206, headers);
  if (fault?.kind === 'cut') {
    const cutAt = Math.min(end, start + (fault.cutAfterBytes ?? FAULT_DEFAULTS.cutAfterBytes));
    await writeChunks(res, modelChunks(model.id, start, cutAt));
    await cutConnection(res);
    return;
  }
  if (fault?.kind === 'trickle')
    await trickle(res, end - start, (index) => modelBytesAt(model.id, start + index, 1), fault, sleep);
  else await writeChunks(res, modelChunks(model.id, start, end));
  res.end();
}

/** The bytes [start, end) of the model's file in chunks, each made only when it is written. */
function* modelChunks(modelId: string, start: number, end: number): Generator<Buffer> {
  for (let position = start; position < end; position += MODEL_CHUNK_BYTES)
    yield modelBytesAt(modelId, position, Math.min(MODEL_CHUNK_BYTES, end - position));
}

/** Lets what was written reach the kernel, then drops the connection mid-body. */
async function cutConnection(res: ServerResponse): Promise<void> {
  res.flushHeaders();
  const socket = res.socket;
  if (socket === null) return;
  // An empty write's callback runs once everything queued before it has been written.
  await new Promise<void>((resolve) => {
    socket.once('close', resolve);
    socket.write(Buffer.alloc(0), () => {
      socket.off('close', resolve);
      resolve();
    });
  });
  socket.destroy();
}
