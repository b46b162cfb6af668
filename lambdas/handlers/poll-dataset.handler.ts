import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { pollDatasetStep } from '../steps/poll-dataset.js';

/** Task PollDataset: reads the dataset after a Wait and schedules the next poll. */
export const handler = stepHandler(pollDatasetStep, { service: trainingServiceFromEnvironment });
