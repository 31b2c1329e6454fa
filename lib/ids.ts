/** Opaque identifiers: random UUIDs (the id of a row never encodes anything a client could rely on). */
import crypto from 'node:crypto';

export const newId = (): string => crypto.randomUUID();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID.test(s);
