import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { copyModelStep } from '../steps/copy-model.js';

/** Task CopyModel: streams the finished model into models/<drop>/<model id>/, then writes model.json. */
export const handler = stepHandler(copyModelStep, { service: TRAINING_SERVICE });
