/**
 * Deterministic, position-addressable model file contents. The byte at position p depends only
 * on the model id and p, so any range can be produced without producing what comes before it:
 * Range requests are cheap and a multi-GB model costs no memory. Tests use this to check bytes.
 */
import { hashString } from './random.js';

/** Size of the chunks the download stream produces. */
export const MODEL_CHUNK_BYTES = 64 * 1024;

/** murmur3's 32-bit finalizer over (seed, word index): a well-mixed word per 4-byte position. */
function wordAt(seed: number, index: number): number {
  let h = (seed ^ Math.imul(index, 0x9e3779b1)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Words are stored little-endian everywhere, so the bytes do not depend on the machine. */
const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The bytes [start, start + length) of the model file of `modelId`. */
export function modelBytesAt(modelId: string, start: number, length: number): Buffer {
  if (!Number.isSafeInteger(start) || start < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`bad model byte range: start ${start}, length ${length}`);
  }
  const seed = hashString(modelId);
  const firstWord = Math.floor(start / 4);
  const skip = start - firstWord * 4;
  const words = new Uint32Array(Math.ceil((skip + length) / 4));
  for (let i = 0; i < words.length; i++) {
    const index = firstWord + i;
    // The high bits of the index go into the seed, so the bytes never repeat (not every 16 GiB).
    const high = Math.floor(index / 0x100000000);
    words[i] = wordAt((seed ^ Math.imul(high, 0x27d4eb2d)) >>> 0, index >>> 0);
  }
  const buffer = Buffer.from(words.buffer);
  if (!HOST_IS_LITTLE_ENDIAN) buffer.swap32();
  return buffer.subarray(skip, skip + length);
}
