/** What the platform client needs of a source row: its type, address and (opened) key. */
import type { RunSource } from '../db/schedulerSources';
import { openSecret } from '../secretBox';
import type { PlatformTarget } from './platforms';

export function sourceTarget(s: RunSource, encryptionKey: Buffer): PlatformTarget {
  return { sourceType: s.source_type, url: s.url, apiKey: s.api_key_sealed ? openSecret(encryptionKey, s.api_key_sealed) : null };
}
