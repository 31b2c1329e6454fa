/** Opaque identifiers: random UUIDs (the id of a row never encodes anything a client could rely on). */
import crypto from 'node:crypto';

export const newId = (): string => crypto.randomUUID();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID.test(s);

/** A UUID standing on its own in a text: not part of a longer run of letters and digits. */
const UUID_IN_TEXT = /(?<![0-9A-Za-z])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Za-z])/g;

/**
 * `s` with every UUID in it written in lower case. UUIDs are case-insensitive (RFC 9562) and the ids handed out here
 * are lower case (randomUUID), so an id a client wrote in upper or mixed case names the same row once lowered.
 * Anything else in `s` is kept as written.
 */
export const lowerCaseUuids = (s: string): string => s.replace(UUID_IN_TEXT, (u) => u.toLowerCase());
