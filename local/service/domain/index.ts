/**
 * The simulated service's domain: its records (datasets, files, held-out examples, models), the
 * rules that move them through their phases on the service clock, credits, the refusals of the
 * contract (errors.ts), the generated data (masking, model bytes, seeded random) and the records
 * kept in a file across restarts.
 *
 * It must not speak HTTP (no requests, answers or URLs) and must not import faults/: a fault
 * rule changes what a client sees, never what the service holds.
 */
export { createClock, type ServiceClock } from './clock.js';
export { DataFileReader, type FileReadResult } from './data-reader.js';
export { maskText } from './masking.js';
export { modelBytesAt, MODEL_CHUNK_BYTES } from './model-bytes.js';
export { persistState, parseRecords, serializeRecords } from './persistence.js';
export { hashString, mulberry32, type Random } from './random.js';
export { ServiceState, type ServiceRecords } from './state.js';
