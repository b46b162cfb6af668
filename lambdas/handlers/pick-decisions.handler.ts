import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { pickDecisionsStep } from '../steps/pick-decisions.js';

/** Task PickDecisions: answers the suggested questions (train.json overrides checked first). */
export const handler = stepHandler(pickDecisionsStep, { service: TRAINING_SERVICE });
