/**
 * Secrets at rest (source API keys, code-host tokens): AES-256-GCM with the key derived from ARMADA_ENCRYPTION_KEY
 * (`ResolvedKeys.encryption`). Stored form: `v1:<iv b64>:<tag b64>:<ciphertext b64>`.
 */
import crypto from 'node:crypto';

const PREFIX = 'v1';

export function sealSecret(key: Buffer, plaintext: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [PREFIX, iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
}

/** Throws when the value was sealed with another key or was tampered with. */
export function openSecret(key: Buffer, sealed: string): string {
  const [prefix, iv, tag, data] = sealed.split(':');
  if (prefix !== PREFIX || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
}
