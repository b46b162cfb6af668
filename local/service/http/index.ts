/**
 * HTTP plumbing that knows no endpoint and no fault: replies and their writing, bounded body
 * reading and validation, path matching, the listening servers, HMAC signatures (presigned URLs,
 * list cursors), the cursors themselves and a gauge of requests in flight.
 *
 * It must not import endpoints/ or faults/, nor act on records: it is the layer both build on.
 */
export { decodeCursor, encodeCursor, type ListFilters, type ListName } from './cursor.js';
export {
  asServiceError,
  errorReply,
  guarded,
  matchPath,
  parseJsonObject,
  queryObject,
  readSmallBody,
  requestUrl,
  sendReply,
  validate,
  writeChunks,
  type Reply,
  type Sleep,
} from './http.js';
export { InFlightGauge } from './in-flight.js';
export { listen, sleepUntil, stop } from './listening.js';
export { Signer } from './signing.js';
