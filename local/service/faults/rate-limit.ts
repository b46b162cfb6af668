/**
 * The `maxRequestsPerSecond` knob: a token bucket over the API's requests (not the presigned
 * file transfers, which go to storage). It holds one second's worth of requests and refills at
 * the limit; a request that finds it empty is answered 429 `rate_limited`, before any side
 * effect, with `Retry-After` in whole seconds until a token is back (at least 1). Real time, not
 * the service clock: a rate is about how fast requests arrive, whatever the tests do to time.
 */
export class RequestRateLimit {
  #tokens = 0;
  #refilledAt = 0;
  #limit = 0;
  #limited = 0;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Requests per second allowed from now on; 0 lifts the limit. */
  setLimit(perSecond: number): void {
    if (perSecond !== this.#limit) {
      this.#limit = perSecond;
      this.#tokens = perSecond;
      this.#refilledAt = this.now();
    }
  }

  /** Takes a token for one request: undefined when it may go on, else the Retry-After seconds. */
  take(): number | undefined {
    if (this.#limit === 0) return undefined;
    const now = this.now();
    this.#tokens = Math.min(this.#limit, this.#tokens + ((now - this.#refilledAt) / 1000) * this.#limit);
    this.#refilledAt = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return undefined;
    }
    this.#limited += 1;
    return Math.max(1, Math.ceil((1 - this.#tokens) / this.#limit));
  }

  /** Requests answered 429 by the limit so far. */
  limited(): number {
    return this.#limited;
  }
}
