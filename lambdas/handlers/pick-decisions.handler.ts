import { stepHandler } from '../run/handler.js';
import { pickDecisionsStep } from '../steps/pick-decisions.js';

/** Task PickDecisions: answers the suggested questions (train.json overrides checked first). */
export const handler = stepHandler(pickDecisionsStep);
