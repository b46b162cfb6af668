/**
 * HTTP plumbing that knows no endpoint and no fault: replies and their writing, bounded body
 * reading and validation, path matching, HMAC signatures (presigned URLs, list cursors), the
 * cursors themselves and a gauge of requests in flight.
 *
 * It must not import endpoints/ or faults/, nor act on records: it is the layer both build on.
 */
export { InFlightGauge } from './in-flight.js';
