/**
 * The simulated training service: an in-memory, strict implementation of
 * docs/service-contract.md (Parts A and B), served over real HTTP on loopback.
 *
 * PUBLIC SURFACE (tests, local mode and benchmarks use only this):
 *
 *   const service = await startSimulatedService({ credits: 3, trainingMs: 0 });
 *   service.apiUrl      // base_url, e.g. 'http://127.0.0.1:40123' (paths start with /v1)
 *   service.fileUrl     // origin of presigned URLs, e.g. 'http://127.0.0.1:40124'
 *   service.apiKey
 *   service.clock.now() / service.clock.advance(ms)   // move time forward (expiries, phases)
 *   service.configure({ failTrainings: 1, faults: [...] })  // change knobs while running
 *   service.credits()                                  // credits left
 *   service.requestCount('startTraining')              // requests seen per endpoint (faulted ones too)
 *   service.faultCount('garble')                       // fault rules fired, of a kind or of all
 *   service.removeModelFiles(modelId, 'refunded' | 'moved')  // model -> next_action 'none'
 *   service.deleteRecord('dataset' | 'model', id)      // gone: 404 not_found on it from now on
 *   service.uploadsInFlight(reset?)                    // { now, max } file uploads served at once
 *   service.fileDigest(datasetId, fileName)            // { bytes, sha256 } of the last upload, or undefined
 *   await service.close()
 *
 *   startSimulatedService(options, { stateFile })   // records and credits kept in a file across restarts
 *
 * Also exported: modelBytesAt(modelId, start, length), the generator behind model downloads
 * (tests check downloaded bytes against it), and validateOptions.
 *
 * LAYOUT (each folder's index.ts says what it owns and must not do; they depend one way,
 * options.ts <- domain <- http <- faults <- endpoints <- server.ts, and import each other through
 * the index):
 *   options.ts   the knobs, their defaults and validation (the CLI's flags map onto them), with the
 *                fault kinds' names and settings; it imports no folder, so every folder reads it
 *   server.ts    startSimulatedService: the two servers, the parts they share, the handle
 *   domain/      records, phases on the service clock, credits, persistence: no HTTP, no faults
 *   http/        replies, bodies, paths, signatures and cursors: no endpoint, no fault
 *   faults/      fault rules, misbehaviours, the rate limit, and where each acts on a request
 *   endpoints/   the routes (names, methods, paths from lambdas/service-client/contract.ts) and
 *                their handlers
 * `hopper service` (local/cli/service.ts) maps its flags onto options.ts.
 */
export type { SimulatedServiceOptions, FaultRule, EndpointName, Encoder } from './options.js';
export { DEFAULT_OPTIONS, ENDPOINTS, FAULT_COUNTS, validateOptions } from './options.js';
export { startSimulatedService, type SimulatedService } from './server.js';
export { modelBytesAt } from './domain/index.js';
