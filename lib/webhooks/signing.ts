/**
 * The outbound webhook body and its signature. The signed bytes are the JSON text `{"event":…,"timestamp":…,"data":…}`
 * (exactly the body the receiver gets, minus the trailing `,"signature":"…"` member); see docs/webhooks.md.
 */
import crypto from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Armada-Signature';

export function sign(secret: string, payload: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(payload).digest('hex')}`;
}

/** Returns the HTTP body (signature as the last member) and the signature. */
export function signedBody(secret: string, event: { event: string; timestamp: string; data: Record<string, unknown> }): { body: string; signature: string } {
  const unsigned = JSON.stringify({ event: event.event, timestamp: event.timestamp, data: event.data });
  const signature = sign(secret, unsigned);
  return { body: `${unsigned.slice(0, -1)},"signature":${JSON.stringify(signature)}}`, signature };
}

/** The receiver's check: recompute over the body without its signature member, compare in constant time. */
export function verifySignedBody(secret: string, rawBody: string): boolean {
  const parsed = JSON.parse(rawBody) as Record<string, unknown>;
  const { signature, ...rest } = parsed;
  if (typeof signature !== 'string') return false;
  const expected = Buffer.from(sign(secret, JSON.stringify(rest)));
  const got = Buffer.from(signature);
  return expected.length === got.length && crypto.timingSafeEqual(expected, got);
}
