import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { pollModelStep } from '../steps/poll-model.js';

/** Task PollModel: reads the model after a Wait and schedules the next poll. */
export const handler = stepHandler(pollModelStep, { service: TRAINING_SERVICE });
