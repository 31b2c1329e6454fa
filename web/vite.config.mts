/** Vite build of the board: web/ → web/dist (served by the task service at `/`, api/task/webAssets.ts). */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const api = process.env.ARMADA_DEV_API ?? 'http://127.0.0.1:8887';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  // `npx vite web` during development: the API, streams and service proxy go to a running `armada start`
  server: {
    proxy: {
      '/api': api,
      '/svc': api,
      '/ws': { target: api.replace(/^http/, 'ws'), ws: true },
    },
  },
});
