/** The acting user's code-host token: sealed with the encryption key at rest, opened only to call the host. */
import type { Queryable } from '../db/pool';
import { getSealedToken, upsertToken } from '../db/codehost';
import { openSecret, sealSecret } from '../secretBox';

export async function storeCodehostToken(db: Queryable, key: Buffer, user: string, token: { access_token: string; token_type: string; scope: string }): Promise<void> {
  await upsertToken(db, user, sealSecret(key, token.access_token), token.token_type, token.scope);
}

/** The user's token, or undefined when the user has not signed in (or the encryption key changed since). */
export async function loadCodehostToken(db: Queryable, key: Buffer, user: string): Promise<string | undefined> {
  const sealed = await getSealedToken(db, user);
  if (!sealed) return undefined;
  try {
    return openSecret(key, sealed);
  } catch {
    return undefined;
  }
}
