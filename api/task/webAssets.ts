/**
 * The board (web/, built into ARMADA_WEB_DIR = web/dist) served at `/`: index.html for `/` and for the board's own
 * paths (WEB_ROUTES) when the browser asks for HTML, so a reload of /projects/… works (SPA fallback); the hashed
 * files of /assets/ with a one-year immutable cache; index.html never cached. Nothing under /api or /ws changes:
 * those paths are not routed here, and a request here that is not for HTML gets the API's JSON 404. The routes are
 * hidden from the OpenAPI document and public (no key: they hold no data, the app asks for the key itself).
 * Without a build, `/` says how to make one. A browser that opens any other address outside the API's paths gets
 * index.html with a 404 (installBoardNotFoundPage), and the board shows its not-found screen.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../lib/errors';
import { PUBLIC_ASSET_ROUTE } from '../http/bearerAuth';

/** Top-level paths of the board's screens (web/src/routes.tsx): each serves index.html, with any sub-path. */
export const WEB_ROUTES = ['projects', 'tasks', 'approvals', 'scheduler', 'agents', 'traces', 'settings'] as const;

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** Vite writes hashed file names into one flat folder: anything else (a `..`, a sub-folder) is not an asset. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Armada</title></head><body>
<h1>Armada</h1><p>The board is not built: run <code>npm run build:web</code> in the Armada checkout, then reload.
The API is at <a href="/api/openapi.json">/api</a>.</p></body></html>
`;

const HIDDEN = { hide: true } as object;

/** The API's own 404 for this request (callNotFound would answer 405: GET is served at these paths). */
function noRoute(request: FastifyRequest): Error {
  return notFound(`Route ${request.method} ${request.url.split('?')[0]} not found`);
}

function wantsHtml(request: FastifyRequest): boolean {
  const accept = String(request.headers.accept ?? '');
  return accept === '' || accept.includes('text/html') || accept.includes('*/*');
}

/** index.html (the board's one page), never cached; without a build, the page saying how to make one. */
async function sendBoardPage(reply: FastifyReply, webDir: string): Promise<FastifyReply> {
  let html: string;
  try {
    html = await fs.promises.readFile(path.join(webDir, 'index.html'), 'utf8');
  } catch {
    html = NOT_BUILT;
  }
  return reply
    .header('cache-control', 'no-cache')
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .type('text/html; charset=utf-8')
    .send(html);
}

/** Paths that are the API's, whatever is asked of them: an unknown one there is always the JSON 404 (or 401). */
const API_PATHS = ['/api', '/ws', '/svc'];

/**
 * A request no route serves that is a browser opening a page: GET or HEAD, asking for HTML by name (a browser's
 * navigation does; a client that takes anything, as curl and fetch do by default, does not), outside the API's paths.
 */
function opensMissingPage(request: FastifyRequest): boolean {
  if (!request.is404 || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
  const urlPath = request.url.split('?')[0] ?? '';
  if (API_PATHS.some((p) => urlPath === p || urlPath.startsWith(`${p}/`))) return false;
  return String(request.headers.accept ?? '').includes('text/html');
}

/**
 * A browser that opens an address nothing serves (`/nope`) gets index.html with a 404, and the board shows its own
 * not-found screen with a way back; it showed the API's JSON 404, or its JSON 401 when a key is configured (a
 * navigation sends no key). An app-level onRequest hook, installed before authentication (api/task/edges.ts): the
 * page is public like the board's files, and holds no data. Every other unknown request keeps the JSON 404.
 */
export function installBoardNotFoundPage(app: FastifyInstance, webDir: string): void {
  app.addHook('onRequest', async (request, reply) => {
    if (opensMissingPage(request)) return sendBoardPage(reply.code(404), webDir);
  });
}

export const webAssetRoutes: FastifyPluginAsync<{ webDir: string }> = async (app, { webDir }) => {
  const assetsDir = path.join(webDir, 'assets');

  const sendIndex = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!wantsHtml(request)) throw noRoute(request);
    return sendBoardPage(reply, webDir);
  };

  const opts = { schema: HIDDEN, config: PUBLIC_ASSET_ROUTE };
  app.get('/', opts, sendIndex);
  for (const name of WEB_ROUTES) {
    app.get(`/${name}`, opts, sendIndex);
    app.get(`/${name}/*`, opts, sendIndex);
  }

  app.get('/assets/*', opts, async (request, reply) => {
    const name = (request.params as { '*': string })['*'];
    if (!ASSET_NAME.test(name)) throw noRoute(request);
    const file = path.join(assetsDir, name);
    let data: Buffer;
    try {
      data = await fs.promises.readFile(file);
    } catch {
      throw noRoute(request);
    }
    return reply
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .type(CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream')
      .send(data);
  });
};
