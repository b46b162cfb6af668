/**
 * The run's state and its vocabulary: the execution state the state machine carries from Task to
 * Task (RunState and its slots), how a service record becomes a slot (slots.ts), what the model
 * slot says for the Choices and a sweep's encoders (sweep.ts), and the pipeline's
 * own words, each declared once (vocabulary.ts: the steps, the stops, the run phases); the one
 * rule for a paid model (paid-model.ts: paidModelOf, which status/ records and ownership/ acts on).
 *
 * Plain data and pure functions: no I/O, no AWS, no service calls. Everything else reads the run
 * through these types; at run time it uses only schedule/ (a slot's poll schedule) and errors/.
 */
export * from './paid-model.js';
export * from './training-intent.js';
export * from './require-slot.js';
export * from './run-name.js';
export * from './run-order.js';
export * from './slots.js';
export * from './state.js';
export * from './sweep.js';
export * from './vocabulary.js';
