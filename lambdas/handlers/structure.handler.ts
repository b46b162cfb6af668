import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { structureStep } from '../steps/structure.js';

/** Task Structure: structures the dataset, or asks for suggested decisions, as train.json says. */
export const handler = stepHandler(structureStep, { service: TRAINING_SERVICE });
