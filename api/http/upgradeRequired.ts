/**
 * A WebSocket route (`websocket: true`) asked without `Upgrade: websocket` (a plain GET, or the HEAD Fastify adds):
 * @fastify/websocket answered an empty 404, in no service's shape, as if the path did not exist. It is a 426 Upgrade
 * Required in the service's shape, with `Upgrade: websocket` (RFC 9110 §15.5.22). Install after registering
 * @fastify/websocket, so this runs after its own route hook.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { upgradeRequired } from '../../lib/errors';

export function installUpgradeRequired(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.websocket) return;
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      if (request.ws) return handler.call(this, request, reply);
      reply.header('upgrade', 'websocket').header('connection', 'upgrade');
      return reply.send(upgradeRequired(`${request.url.split('?')[0]} is a WebSocket endpoint: connect with Upgrade: websocket`));
    };
  });
}
