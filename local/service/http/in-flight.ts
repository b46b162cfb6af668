/**
 * How many requests of one kind the service is serving at once, and the most seen: lets a test
 * or a benchmark check that a client bounds its concurrency (e.g. file uploads).
 */
export class InFlightGauge {
  #now = 0;
  #max = 0;

  /** Counts a request in for the time `work` runs. */
  async during<T>(work: () => Promise<T>): Promise<T> {
    this.#now++;
    this.#max = Math.max(this.#max, this.#now);
    try {
      return await work();
    } finally {
      this.#now--;
    }
  }

  /** Requests being served now and the most at once since the start or the last reset. */
  read(reset = false): { now: number; max: number } {
    const reading = { now: this.#now, max: this.#max };
    if (reset) this.#max = this.#now;
    return reading;
  }
}
