/**
 * What the transfer benchmarks share: memory growth while a transfer runs, and a JSON Lines
 * body generated as it is pulled (so the source costs no memory of its own).
 */
import { Readable } from 'node:stream';

/** Node's collector when started with --expose-gc; the figures are steadier with it. */
export const gc = (globalThis as { gc?: () => void }).gc;

export interface Growth {
  /** Peak RSS over the baseline while the transfer ran: includes garbage not yet collected. */
  peak: number;
  /** Heap and buffers still held after the transfer and a full GC: what the transfer kept. */
  retained: number;
}

/** Memory growth while `work` runs, sampled every 10 ms. */
export async function measure(work: () => Promise<void>): Promise<Growth> {
  gc?.();
  const held = () => {
    const usage = process.memoryUsage();
    return usage.heapUsed + usage.arrayBuffers;
  };
  const baselineRss = process.memoryUsage().rss;
  const baselineHeld = held();
  let peak = baselineRss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, process.memoryUsage().rss);
  // Buffers are freed by finalizers that run after a GC: collect, let them run, collect again.
  gc?.();
  await new Promise((resolve) => setImmediate(resolve));
  gc?.();
  return { peak: peak - baselineRss, retained: Math.max(0, held() - baselineHeld) };
}

/** `bytes` of JSON Lines the service reads, generated as they are pulled. */
export function jsonlSource(bytes: number): Readable {
  const line = Buffer.from(`{"text":"${'a'.repeat(118)}"}\n`); // 128 bytes
  let left = bytes;
  return new Readable({
    read() {
      if (left === 0) return void this.push(null);
      const count = Math.min(512, Math.ceil(left / line.length));
      const chunk = Buffer.concat(Array.from({ length: count }, () => line)).subarray(0, left);
      left -= chunk.length;
      this.push(chunk);
    },
  });
}
