import { stepHandler } from '../run/handler.js';
import { trainingServiceFromEnvironment } from '../run/training-service.js';
import { copyModelStep } from '../steps/copy-model.js';

/** Task CopyModel: streams the finished model into models/<drop>/<model id>/, then writes model.json. */
export const handler = stepHandler(copyModelStep, { service: trainingServiceFromEnvironment });
