/**
 * The client's own request rate, adapted to the service's limit (AIMD): unlimited until the
 * service answers 429, then requests are spaced to a rate that halves on each 429 (at most once
 * per second, since requests already in flight see the same limit) and grows by one request per
 * second for each second without one. The refused request itself waits its Retry-After (retry.ts);
 * the others go on at the lower rate. One limiter per service for the whole process (a Lambda container, or local mode),
 * shared by every client instance there (sharedRateLimiter), so that concurrent invocations and
 * executions keep under the limit together instead of each spending its retries on 429s.
 */

export interface RateLimiterSettings {
  /** Milliseconds, monotonic. Default performance.now. */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** The lowest rate a run of 429s brings it down to, requests per second. Default 0.5. */
  readonly minPerSecond?: number;
  /** Requests per second added for each second without a 429. Default 1. */
  readonly increasePerSecond?: number;
}

/** What the limiter did so far: for tests, benchmarks and logs. */
export interface RateLimiterStats {
  /** Requests per second now (Infinity before the first 429). */
  readonly perSecond: number;
  readonly throttled: number;
  /** Requests that waited for their turn, and for how long in all. */
  readonly delayed: number;
  readonly delayedMs: number;
}

const DECREASE_FACTOR = 0.5;
/** A 429 within this long after a decrease belongs to the same burst: no second halving. */
const DECREASE_EVERY_MS = 1000;
/** The window over which the rate at the first 429 is measured. */
const OBSERVE_MS = 1000;

export class AdaptiveRateLimiter {
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #min: number;
  readonly #increase: number;
  #perSecond = Infinity;
  /** When the last request started (ms, #now's clock). */
  #lastStartAt = -Infinity;
  /** Requests waiting for their turn, first come first served. */
  readonly #waiting: (() => void)[] = [];
  #pumping = false;
  #lastDecreaseAt = -Infinity;
  #lastIncreaseAt = 0;
  /** Start times of the requests of the last second: the rate the service refused, at a 429. */
  readonly #recent: number[] = [];
  /** The counts of RateLimiterStats. */
  readonly #counts = { throttled: 0, delayed: 0, delayedMs: 0 };

  constructor(settings: RateLimiterSettings = {}) {
    this.#now = settings.now ?? (() => performance.now());
    this.#sleep = settings.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#min = settings.minPerSecond ?? 0.5;
    this.#increase = settings.increasePerSecond ?? 1;
  }

  /**
   * Waits for this request's turn: requests start 1/rate apart, in the order they ask, at the
   * rate of the moment each starts (not the rate when it joined the queue, so that a queue built
   * while the rate was low drains faster as the rate grows back).
   */
  async acquire(): Promise<void> {
    const asked = this.#now();
    this.#grow(asked);
    if (this.#perSecond === Infinity && this.#waiting.length === 0) {
      this.#started(asked);
      return;
    }
    await new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      void this.#pump();
    });
    const waited = this.#now() - asked;
    if (waited > 0) {
      this.#counts.delayed += 1;
      this.#counts.delayedMs += waited;
    }
  }

  /** The service answered 429: slow down to half the rate it refused (once per burst of 429s). */
  throttled(): void {
    const now = this.#now();
    this.#counts.throttled += 1;
    if (now - this.#lastDecreaseAt < DECREASE_EVERY_MS) return;
    const observed = this.#recent.filter((start) => start >= now - OBSERVE_MS).length * (1000 / OBSERVE_MS);
    this.#perSecond = Math.max(this.#min, Math.min(this.#perSecond, observed) * DECREASE_FACTOR);
    this.#lastDecreaseAt = now;
    this.#lastIncreaseAt = now;
  }

  stats(): RateLimiterStats {
    return { perSecond: this.#perSecond, ...this.#counts };
  }

  /** Lets the waiting requests go one at a time, each when the current rate allows. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#waiting.length > 0) {
        const now = this.#now();
        this.#grow(now);
        const at = this.#perSecond === Infinity ? now : this.#lastStartAt + 1000 / this.#perSecond;
        // Slept until then, the rate is read again: it may have grown, or a 429 may have cut it.
        if (at > now) await this.#sleep(at - now);
        else {
          this.#started(now);
          this.#waiting.shift()?.();
        }
      }
    } finally {
      this.#pumping = false;
    }
  }

  #started(at: number): void {
    this.#lastStartAt = at;
    this.#recent.push(at);
    while ((this.#recent[0] ?? at) < at - OBSERVE_MS) this.#recent.shift();
  }

  /** Additive increase: one request per second more for each second since the last change. */
  #grow(now: number): void {
    if (this.#perSecond === Infinity) return;
    const seconds = (now - this.#lastIncreaseAt) / 1000;
    if (seconds <= 0) return;
    this.#perSecond += this.#increase * seconds;
    this.#lastIncreaseAt = now;
  }
}

const shared = new Map<string, AdaptiveRateLimiter>();

/** The process's limiter for the service at `baseUrl` (one per origin). */
export function sharedRateLimiter(baseUrl: string): AdaptiveRateLimiter {
  const origin = new URL(baseUrl).origin;
  const limiter = shared.get(origin) ?? new AdaptiveRateLimiter();
  shared.set(origin, limiter);
  return limiter;
}
