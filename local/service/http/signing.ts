/**
 * HMAC signatures with a key born with the service instance: presigned file URLs and list
 * cursors are only valid on the service that issued them.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes of HMAC-SHA256 kept: ample against forgery for a test double. */
const SIGNATURE_BYTES = 16;

export class Signer {
  private readonly key = randomBytes(32);

  sign(text: string): Buffer {
    return createHmac('sha256', this.key).update(text).digest().subarray(0, SIGNATURE_BYTES);
  }

  signBase64url(text: string): string {
    return this.sign(text).toString('base64url');
  }

  verify(text: string, signature: Buffer): boolean {
    const expected = this.sign(text);
    return signature.length === expected.length && timingSafeEqual(signature, expected);
  }

  verifyBase64url(text: string, signature: string): boolean {
    if (!/^[A-Za-z0-9_-]+$/.test(signature)) return false;
    return this.verify(text, Buffer.from(signature, 'base64url'));
  }

  /** Token = base64url(signature || payload): opaque, tamper-evident, carries its payload. */
  seal(payload: string): string {
    return Buffer.concat([this.sign(payload), Buffer.from(payload, 'utf8')]).toString('base64url');
  }

  /** The payload of a sealed token, or undefined when it was not sealed by this signer. */
  unseal(token: string): string | undefined {
    if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= SIGNATURE_BYTES) return undefined;
    const payload = raw.subarray(SIGNATURE_BYTES).toString('utf8');
    return this.verify(payload, raw.subarray(0, SIGNATURE_BYTES)) ? payload : undefined;
  }
}
