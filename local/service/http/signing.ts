/**
 * HMAC signatures with a key born with the service instance: presigned file URLs and list
 * cursors are only valid on the service that issued them.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes of HMAC-SHA256 kept: ample against forgery for a test double. */
const SIGNATURE_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export class Signer {
  private readonly key = randomBytes(32);
  /** Origin of presigned URLs, known once the file server listens. */
  origin = '';

  private sign(text: string): Buffer {
    return createHmac('sha256', this.key).update(text).digest().subarray(0, SIGNATURE_BYTES);
  }

  private verify(text: string, signature: Buffer): boolean {
    const expected = this.sign(text);
    return signature.length === expected.length && timingSafeEqual(signature, expected);
  }

  /** A URL of the file server for `path`, valid until `expiresAt`. */
  presign(path: string, expiresAt: number): string {
    const signature = this.sign(`${path}\n${expiresAt}`).toString('base64url');
    return `${this.origin}${path}?expires=${expiresAt}&signature=${signature}`;
  }

  /** When a presigned URL expires, or undefined when this service did not sign it. */
  presignedExpiry(url: URL): number | undefined {
    const expires = url.searchParams.get('expires');
    const signature = url.searchParams.get('signature');
    if (expires === null || signature === null || !/^\d{1,16}$/.test(expires) || !BASE64URL.test(signature)) {
      return undefined;
    }
    const signed = this.verify(`${url.pathname}\n${expires}`, Buffer.from(signature, 'base64url'));
    return signed ? Number(expires) : undefined;
  }

  /** Token = base64url(signature || payload): opaque, tamper-evident, carries its payload. */
  seal(payload: string): string {
    return Buffer.concat([this.sign(payload), Buffer.from(payload, 'utf8')]).toString('base64url');
  }

  /** The payload of a sealed token, or undefined when it was not sealed by this signer. */
  unseal(token: string): string | undefined {
    if (!BASE64URL.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= SIGNATURE_BYTES) return undefined;
    const payload = raw.subarray(SIGNATURE_BYTES).toString('utf8');
    return this.verify(payload, raw.subarray(0, SIGNATURE_BYTES)) ? payload : undefined;
  }
}
