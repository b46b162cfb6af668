import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { startTrainingStep } from '../steps/start-training.js';

/** Task StartTraining: starts a training, or adopts the one a lost call already started. */
export const handler = stepHandler(startTrainingStep, { service: TRAINING_SERVICE });
