/** The task service (A): Fastify app with every /api resource plugin. */
import websocket from '@fastify/websocket';
import { websocketErrorHandler } from '../http/errorHandlers';
import { originMayConnect } from '../http/cors';
import { installUpgradeRequired } from '../http/upgradeRequired';
import { answerPings } from '../http/wsTextFrames';
import { createEventListener } from '../../lib/events/listener';
import { createLogFeed } from '../../lib/events/logFeed';
import type { Metrics } from '../../lib/metrics';
import { createBaseApp } from '../http/baseApp';
import type { TaskAppDeps, TaskServiceDeps } from './deps';
import { codehostRouterErrorBody, codehostRoutes } from './codehost';
import { installTaskEdges } from './edges';
import { filesystemRoutes } from './filesystem';
import { projectRoutes } from './projects';
import { taskRoutes } from './tasks';
import { approvalRoutes } from './approvals';
import { taskTemplateRoutes } from './taskTemplates';
import { draftRoutes, draftStreamRoutes } from './drafts';
import { webhookRoutes } from './webhooks';
import { startWebhookDispatcher } from '../../lib/webhooks/dispatcher';
import { createCpuPool } from '../../lib/attempts/cpuPool';
import { startAttemptStartReconciler } from './attemptStartReconciler';
import { startClosedWorkflowReconciler } from './closedWorkflowReconciler';
import { attemptRoutes } from './attempts';
import { branchRoutes } from './branches';
import { processRoutes } from './processes';
import { attemptStreamRoutes } from './attemptStreams';
import { webAssetRoutes } from './webAssets';
import { serviceProxyRoutes } from './serviceProxy';
import { eventStreamRoutes } from './eventStream';
import { createBackgroundWork } from '../../lib/runtime/background';
import { sealStoredRepoUrls } from '../../lib/projects/repoCredentials';
import { isPostgresUnavailable } from '../../lib/db/pool';
import { named } from '../http/pluginName';

/** How soon a credential-sealing pass PostgreSQL could not take runs again. */
const SEAL_RETRY_MS = 10_000;

export async function buildTaskApp(base: TaskServiceDeps, metrics: Metrics) {
  const app = createBaseApp({
    service: 'task',
    logger: base.logger,
    metrics,
    version: base.config.version,
    requestTimeoutMs: base.config.requestTimeoutMs,
    errorStyle: 'envelope',
    routerErrorBody: codehostRouterErrorBody,
    dependencies: base.dependencies,
    healthCheck: async () => {
      await base.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  await installTaskEdges(app, base);
  const connectionString = (base.db as unknown as { options: { connectionString: string } }).options.connectionString;
  const events = await createEventListener(connectionString, base.db, base.logger);
  const logs = createLogFeed(base.db, events, base.logger);
  app.addHook('onClose', async () => {
    logs.close();
    await events.close();
  });
  const background = createBackgroundWork(base.logger);
  app.addHook('onClose', async () => background.settle());
  // rows written before repository credentials were sealed (SQL migrations cannot see the key): a pass PostgreSQL
  // could not take (a service started during an outage) is tried again every SEAL_RETRY_MS until one runs, a pass
  // that failed otherwise is done again at the next start; the worker uses such a row's URL as it is meanwhile
  let sealRetry: NodeJS.Timeout | undefined;
  let closing = false;
  const seal = () =>
    background.run('sealing the credentials of stored repository URLs', () =>
      sealStoredRepoUrls(base.db, base.keys.encryption, base.logger).catch((err: unknown) => {
        if (isPostgresUnavailable(err) && !closing) sealRetry = setTimeout(seal, SEAL_RETRY_MS).unref();
        throw err;
      }),
    );
  seal();
  app.addHook('onClose', async () => {
    closing = true;
    clearTimeout(sealRetry);
  });
  const deps: TaskAppDeps = { ...base, events, logs, metrics, background };
  // handleProtocols: the sockets implement no subprotocol, so none is ever selected (RFC 6455 §4.2.2); ws's default
  // echoed the first one a client offered, telling it the server spoke that protocol
  await app.register(websocket, {
    options: { maxPayload: 64 * 1024, handleProtocols: () => false, autoPong: false },
    errorHandler: websocketErrorHandler,
    // the service stopping closes every socket with 1001 "going away" (a finished log closes with 1000): the client
    // reconnects and resumes (`after`, the event stream's cursor) on another replica or once this one is back
    preClose(done) {
      for (const client of app.websocketServer.clients) client.close(1001, 'service stopping');
      done();
    },
  });
  // pings are answered by answerPings (autoPong off): a client flooding them and reading none of the pongs is closed
  // with 1008 and a reason (ws's own guard cut it: 1006)
  app.websocketServer.on('connection', answerPings);
  installUpgradeRequired(app, (origin, host) => originMayConnect(origin, host, base.config.corsOrigins, 'loopback'));
  await app.register(named(projectRoutes), { prefix: '/api', deps });
  await app.register(named(taskRoutes), { prefix: '/api', deps });
  await app.register(named(approvalRoutes), { prefix: '/api', deps });
  await app.register(named(taskTemplateRoutes), { prefix: '/api', deps });
  await app.register(named(draftRoutes), { prefix: '/api', deps });
  await app.register(named(draftStreamRoutes), { deps });
  await app.register(named(webhookRoutes), { prefix: '/api', deps });
  const dispatcher = startWebhookDispatcher(deps);
  app.addHook('onClose', async () => dispatcher.stop());
  const startReconciler = startAttemptStartReconciler(deps);
  app.addHook('onClose', async () => startReconciler.stop());
  const closedReconciler = startClosedWorkflowReconciler(deps);
  app.addHook('onClose', async () => closedReconciler.stop());
  await app.register(named(filesystemRoutes), { prefix: '/api', deps });
  await app.register(named(codehostRoutes), { prefix: '/api', deps });
  const cpu = createCpuPool();
  app.addHook('onClose', async () => cpu.close());
  await app.register(named(attemptRoutes), { prefix: '/api', deps, cpu });
  await app.register(named(processRoutes), { prefix: '/api', deps });
  await app.register(named(branchRoutes), { prefix: '/api', deps });
  await app.register(named(attemptStreamRoutes), { deps, cpu });
  await app.register(named(eventStreamRoutes), { deps });
  await app.register(named(serviceProxyRoutes), { deps });
  await app.register(named(webAssetRoutes), { webDir: base.config.webDir });
  return app;
}
