/**
 * Hopper's EventBridge events (events.ts: Started, Succeeded, Failed, Superseded and what they
 * carry) and putting each once per run (event-bus.ts, with markers under status/.events/). The
 * EventBridge bus and when the steps put the events are the runtime's (lambdas/runtime/).
 *
 * It never carries the API key: nothing here reads the runtime's secrets.
 */
export * from './event-bus.js';
export * from './events.js';
