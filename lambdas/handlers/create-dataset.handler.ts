import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { createDatasetStep } from '../steps/create-dataset.js';

/** Task CreateDataset: declares the drop's data files to the service as a new dataset. */
export const handler = stepHandler(createDatasetStep, { service: trainingServiceFromEnvironment });
