/**
 * The drop's lock: which run of a drop may spend its credit and what happens to a paid model.
 * The newest train.json wins (supersede.ts), one training at a time per drop (training-claim.ts,
 * status/.training/<drop>.json), and the one rule for a paid model: paidModelOf (re-exported from
 * state/paid-model.ts) says whether a run holds one, resume.ts which run a resume takes and which paid model a new run adopts.
 *
 * The credit budget (credit-ledger.ts, status/.credits/ledger.json) counts the credits runs take.
 *
 * Every rule about credits is asked of this module; their words come from errors/messages.ts.
 */
export * from './adoption.js';
export * from './credit-ledger.js';
export * from './resume.js';
export * from './supersede.js';
export * from './training-claim.js';
