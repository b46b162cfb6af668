/**
 * The service clock. Every timestamp and every lazily evaluated phase reads this clock, so a
 * test can jump past a phase or an expiry with advance(ms) instead of sleeping.
 */
export interface ServiceClock {
  /** Milliseconds since the epoch, as the service sees it. */
  now(): number;
  /** Move the service's time forward (never backward). */
  advance(ms: number): void;
}

/**
 * Follows the system clock plus an offset, or, given `manualStart` (an ISO time), stands
 * still at that time and moves only on advance().
 */
export function createClock(manualStart?: string): ServiceClock {
  let offset = 0;
  // validateOptions has checked that manualStart parses.
  const manual = manualStart === undefined ? undefined : Date.parse(manualStart);
  return {
    now: () => (manual ?? Date.now()) + offset,
    advance(ms: number): void {
      if (!Number.isFinite(ms) || ms < 0) throw new Error(`clock.advance needs a finite ms >= 0, got ${ms}`);
      offset += ms;
    },
  };
}
