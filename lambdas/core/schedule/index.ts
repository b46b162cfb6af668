/**
 * When a run looks again: the poll schedule (polling.ts: backoff, deadlines, the bound on a run's
 * loops) and how long a paid model's copy may be put off (files-deadline.ts).
 *
 * Pure arithmetic over times and slots: no I/O.
 */
export * from './files-deadline.js';
export * from './polling.js';
