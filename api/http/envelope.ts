/** The task service's response envelope: `{success, data, pagination?, meta}` and `{success:false, error, meta}`. */
export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
  hasNext: boolean;
  hasPrev: boolean;
}

export interface Meta {
  timestamp: string;
  version: string;
}

export function meta(version: string): Meta {
  return { timestamp: new Date().toISOString(), version };
}

export function pagination(page: number, limit: number, total: number): Pagination {
  const pages = Math.ceil(total / limit);
  return { page, limit, total, pages, hasNext: page < pages, hasPrev: page > 1 };
}

export interface ErrorBody {
  success: false;
  error: { code: string; message: string; details?: Record<string, unknown> };
  meta: Meta;
}

export function errorBody(version: string, code: string, message: string, details?: Record<string, unknown>): ErrorBody {
  return { success: false, error: details ? { code, message, details } : { code, message }, meta: meta(version) };
}

/** A success body: `{success:true, data, meta}`. */
export function ok<T>(version: string, data: T): { success: true; data: T; meta: Meta } {
  return { success: true, data, meta: meta(version) };
}

/** A list page: `{success:true, data, pagination, meta}`. */
export function okPage<T>(version: string, data: T[], page: Pagination): { success: true; data: T[]; pagination: Pagination; meta: Meta } {
  return { success: true, data, pagination: page, meta: meta(version) };
}

/**
 * A list page whose items are already serialised JSON (built by PostgreSQL): the envelope is written around them as
 * text, the same shape `okPage` gives.
 */
export function rawPage(version: string, itemsJson: string, page: Pagination): string {
  return `{"success":true,"data":${itemsJson},"pagination":${JSON.stringify(page)},"meta":${JSON.stringify(meta(version))}}`;
}
