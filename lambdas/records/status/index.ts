/**
 * What a person reads about a run: status/<drop>.json (status.ts: the one writer and reader,
 * conditional so the newest run stays on top), the run's usage and cost summary (usage.ts) and
 * the list prices it is priced at (prices.ts), and the step a status says a run is in
 * (under-way.ts).
 *
 * It records; it does not decide. Whether a run holds a paid model is ownership/'s rule.
 */
export * from './prices.js';
export * from './status.js';
export * from './usage.js';
export * from './under-way.js';
