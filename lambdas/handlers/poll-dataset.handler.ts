import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { pollDatasetStep } from '../steps/poll-dataset.js';

/** Task PollDataset: reads the dataset after a Wait and schedules the next poll. */
export const handler = stepHandler(pollDatasetStep, { service: TRAINING_SERVICE });
