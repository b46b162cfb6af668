import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { pollModelStep } from '../steps/poll-model.js';

/** Task PollModel: reads the model after a Wait and schedules the next poll. */
export const handler = stepHandler(pollModelStep, { service: trainingServiceFromEnvironment });
