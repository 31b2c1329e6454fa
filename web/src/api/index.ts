/** The board's server access: HTTP client, auth key, live streams, query keys and response types. */
export { api, apiPage, ApiError, buildUrl, errorFromBody, svc, SERVICE_KEY_REFUSED, SERVICE_PREFIX, type Page, type Pagination, type RequestOptions, type Service } from './client';
export { getApiKey, onKeyChange, onUnauthorized, reportUnauthorized, setApiKey } from './auth';
export { describeStream, type LostStream, onReconnected, type StreamInfo, useConnectionLost, useLostStreams } from './connection';
export { isUnavailable, retryWhileUnavailable, SERVICE_NAMES, UNAVAILABLE_RETRY_MS, unavailableNote, useErrorKept } from './unavailable';
export { backoffDelay, createSseParser, eventStreamResume, openSseStream, openWebSocketStream, type SseStreamOptions, type StreamHandle, type WebSocketStreamOptions } from './streams';
export { readNdjson } from './ndjson';
export { useSseStream, useWebSocketStream } from './useStream';
export { queryKeys } from './queryKeys';
export * from './types';
export * from './tasks';
export * from './projects';
