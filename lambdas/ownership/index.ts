/**
 * Who owns a drop and what it paid for: which run of a drop may spend its credit and what
 * happens to a paid model. The newest train.json wins (supersede.ts), one training at a time per
 * drop (training-claim.ts, status/.training/<drop>.json); whether a run holds a paid model is
 * core/state/paid-model.ts's paidModelOf, and resume.ts says which run a resume takes and
 * adoption.ts which paid work a new run adopts. standing.ts is the state machine every invocation
 * asks once: owner, finishing (a newer run took over, this one holds a paid model) or giving-way.
 *
 * The credit budget (credit-ledger.ts, status/.credits/ledger.json) counts the credits runs take.
 *
 * Every rule about credits is asked of this module; their words come from core/errors/messages.ts.
 */
export * from './adoption.js';
export * from './credit-ledger.js';
export * from './resume.js';
export * from './supersede.js';
export * from './training-claim.js';
export * from './standing.js';
