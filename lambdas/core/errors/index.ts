/**
 * How a run fails: the run error codes (codes.ts, each with a row in docs/errors.md), RunError
 * (errors.ts), the mapping of any thrown value to one (error-mapping.ts), a record gone at
 * the service (gone.ts), the Lambda error names the state machine matches (lambda-error.ts), and
 * every message's words, written once (messages.ts).
 *
 * Words and codes only: it decides nothing about the run and performs no I/O but gone.ts' one
 * read of the record.
 */
export * from './codes.js';
export * from './error-mapping.js';
export * from './errors.js';
export * from './gone.js';
export * from './lambda-error.js';
export * from './messages.js';
