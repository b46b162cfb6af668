import { createTriggerHandler, sfnStarterFromEnvironment } from './steps/trigger.js';

/** EventBridge "Object Created" for inbox/<drop>/train.json -> StartExecution (not a state machine Task). */
export const handler = createTriggerHandler(sfnStarterFromEnvironment());
