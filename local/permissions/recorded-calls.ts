import calls from './recorded-calls.json' with { type: 'json' };
import type { AwsCall } from './actions.js';

/** The kept set of recorded calls (recorded-calls.json, inlined into the built command). */
export const RECORDED_CALLS: readonly AwsCall[] = calls as AwsCall[];
