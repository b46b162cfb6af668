import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { pickDecisionsStep } from '../steps/pick-decisions.js';

/** Task PickDecisions: answers the suggested questions (train.json overrides checked first). */
export const handler = stepHandler(pickDecisionsStep, { service: trainingServiceFromEnvironment });
