/** The simulated service's knobs for runs that end within a test or a benchmark's round. */

/** Phases of a few milliseconds of real time, so a run moves on its own within a test. */
export const BRISK_SERVICE = {
  readingMs: 20,
  structuringMs: 20,
  queuedMs: 20,
  trainingMs: 40,
  modelBytes: 300_000,
} as const;
