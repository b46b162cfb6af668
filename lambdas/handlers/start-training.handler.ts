import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { startTrainingStep } from '../steps/start-training.js';

/** Task StartTraining: starts a training, or adopts the one a lost call already started. */
export const handler = stepHandler(startTrainingStep, { service: trainingServiceFromEnvironment });
