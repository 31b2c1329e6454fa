/**
 * Gives a plugin the display name fastify otherwise looks for by scanning every loaded module for the one exporting
 * the plugin (fastify/lib/plugin-utils.js `getPluginName`, twice per `register`). In node that scan is quick; under
 * jest, whose `require.cache` is a proxy over a test file's module registry, it took ~0.3 s of CPU per app built
 * (docs/testing.md, "Run time"), in every test file that builds one. The name is the function's own.
 */
const DISPLAY_NAME = Symbol.for('fastify.display-name');

export function named<P extends object>(plugin: P & { name: string }): P {
  const p = plugin as P & { [DISPLAY_NAME]?: string; name: string };
  p[DISPLAY_NAME] ??= p.name;
  return plugin;
}
