// The team app's build: app/dist, served by the service at /app (src/http/team-app.ts). Committed, so
// `npm ci && npm start` serves it without building; `npm run app:check` rebuilds it and fails when the
// committed files drift or the first load passes its budget. `npm run app:dev` serves the sources with
// /api proxied to VITE_API_URL: `npm run mock` by default, or a running service.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/** In development the widget's preview and test page load /widget.js as the service serves it: the built bubble. */
const widgetScript = (): Plugin => ({
  name: 'widget-script',
  configureServer(server) {
    server.middlewares.use('/widget.js', (_req, res) => {
      res.setHeader('Content-Type', 'text/javascript');
      res.end(readFileSync(join(import.meta.dirname, '..', 'widget', 'dist', 'widget.js')));
    });
  },
});

export default defineConfig(({ command }) => ({
  root: import.meta.dirname,
  base: '/app/',
  logLevel: command === 'build' ? 'warn' : 'info',
  plugins: [react(), widgetScript()],
  // Prism (the mock) has no WebSocket: against it the app runs without live updates, and says so.
  define: { 'import.meta.env.VITE_LIVE': JSON.stringify(command === 'build' ? 'on' : (process.env.VITE_LIVE ?? (process.env.VITE_API_URL ? 'on' : 'off'))) },
  build: {
    outDir: process.env.APP_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // One stylesheet file, never a <style> tag: the service's CSP allows no inline style element.
    cssCodeSplit: false,
  },
  server: {
    host: '127.0.0.1',
    port: 5173,
    proxy: { '/api': { target: process.env.VITE_API_URL ?? 'http://127.0.0.1:4010', changeOrigin: true, ws: true } },
  },
}));
