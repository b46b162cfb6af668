import { eventBridgeFromEnvironment, stepHandler } from '../runtime/index.js';
import { validateDropStep } from '../steps/validate-drop.js';

/** Task ValidateDrop: checks train.json and the drop folder; returns the run's configuration. */
export const handler = stepHandler(validateDropStep, { events: eventBridgeFromEnvironment });
