import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { uploadFilesStep } from '../steps/upload-files.js';

/** Task UploadFiles: streams the drop's pending data files from S3 to the service (time-boxed; loops). */
export const handler = stepHandler(uploadFilesStep, { service: TRAINING_SERVICE });
