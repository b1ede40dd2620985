// The chat bubble's own build: one self-contained IIFE, `widget/dist/widget.js`, which the service serves
// at /widget.js. Committed, so `npm ci && npm start` serves it without building; `npm run widget:check`
// rebuilds it and fails when the committed file drifts or passes the 30 KB gzipped budget.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  logLevel: 'warn',
  build: {
    outDir: process.env.WIDGET_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    // Browsers since 2021 (private class fields natively): a site's visitors are not all on the newest one.
    target: 'es2022',
    sourcemap: false,
    lib: { entry: 'src/main.ts', formats: ['iife'], name: 'ChatWidgetBundle', fileName: () => 'widget.js' },
  },
});
