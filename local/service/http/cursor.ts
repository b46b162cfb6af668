/**
 * Keyset cursors for the lists: the cursor holds the creation sequence number of the last item
 * returned, bound to its list and filters, sealed with the service's HMAC key.
 */
import { z } from 'zod';
import { invalidRequest } from '../domain/index.js';
import type { Signer } from './signing.js';

const payloadSchema = z.strictObject({
  list: z.enum(['datasets', 'models']),
  status: z.string().nullable(),
  usable: z.boolean().nullable(),
  after: z.number().int().nonnegative(),
});
type Payload = z.infer<typeof payloadSchema>;

export type ListName = Payload['list'];
/** What a cursor is bound to besides its list: its filters (null when the filter is absent). */
export type ListFilters = Pick<Payload, 'status' | 'usable'>;

export function encodeCursor(signer: Signer, list: ListName, filters: ListFilters, afterSeq: number): string {
  return signer.seal(
    JSON.stringify({ list, status: filters.status, usable: filters.usable, after: afterSeq }),
  );
}

/** The sequence number to continue after; 400 invalid_request for anything this service did not issue. */
export function decodeCursor(signer: Signer, token: string, list: ListName, filters: ListFilters): number {
  const payload = signer.unseal(token);
  if (payload === undefined) throw invalidRequest('cursor was not issued by this service');
  let parsed: Payload;
  try {
    parsed = payloadSchema.parse(JSON.parse(payload));
  } catch {
    throw invalidRequest('cursor was not issued by this service');
  }
  if (parsed.list !== list) throw invalidRequest(`cursor belongs to the ${parsed.list} list`);
  if (parsed.status !== filters.status || parsed.usable !== filters.usable) {
    throw invalidRequest('cursor was issued for other status/usable filters');
  }
  return parsed.after;
}
