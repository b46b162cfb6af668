/**
 * Hopper's EventBridge events (events.ts: Started, Succeeded, Failed, Superseded and what they
 * carry), putting each once per run (event-bus.ts, with markers under status/.events/), the
 * EventBridge bus (eventbridge-bus.ts) and when the steps put them (publish-events.ts).
 *
 * It never carries the API key: nothing here reads the runtime's secrets.
 */
export * from './event-bus.js';
export * from './eventbridge-bus.js';
export * from './events.js';
export * from './publish-events.js';
