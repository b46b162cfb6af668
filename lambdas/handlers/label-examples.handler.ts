import { stepHandler, TRAINING_SERVICE } from '../runtime/index.js';
import { labelExamplesStep } from '../steps/label-examples.js';

/** Task LabelExamples: answers held-out examples from the labels file, in a time-boxed batch. */
export const handler = stepHandler(labelExamplesStep, { service: TRAINING_SERVICE });
