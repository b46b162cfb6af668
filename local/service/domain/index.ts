/**
 * The simulated service's domain: its records (datasets, files, held-out examples, models), the
 * rules that move them through their phases on the service clock, credits, the refusals of the
 * contract (errors.ts), the generated data (masking, model bytes, seeded random) and the records
 * kept in a file across restarts.
 *
 * It must not speak HTTP (no requests, answers or URLs) and must not import faults/: a fault
 * rule changes what a client sees, never what the service holds. Of options.ts it reads only
 * the knobs' type; the knobs reach it validated.
 */
export type { ServiceClock } from './clock.js';
export { DataFileReader } from './data-reader.js';
export { datasetState, QUESTIONS, readDataset, renderDataset, type Dataset } from './datasets.js';
export { conflict, invalidRequest, notFound, ServiceError } from './errors.js';
export { findTask, firstOpenTask, labelTask, openTaskCount } from './held-out.js';
export { maskText } from './masking.js';
export { modelBytesAt, MODEL_CHUNK_BYTES } from './model-bytes.js';
export { assertFilesServable, modelState, renderModel, type Model } from './models.js';
export { persistState, parseRecords, serializeRecords } from './persistence.js';
export { mulberry32, type Random } from './random.js';
export { ServiceState, type ServiceRecords } from './state.js';
