import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { createDatasetStep } from '../steps/create-dataset.js';

/** Task CreateDataset: declares the drop's data files to the service as a new dataset. */
export const handler = stepHandler(createDatasetStep, { service: TRAINING_SERVICE });
