import { eventBridgeFromEnvironment, stepHandler } from '../runtime/index.js';
import { reportStep } from '../steps/report.js';

/** Task Report: decides the run's outcome and writes the final status/<drop>.json. */
export const handler = stepHandler(reportStep, { events: eventBridgeFromEnvironment });
