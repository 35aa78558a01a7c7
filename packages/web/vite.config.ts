import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Built into dist/, served by the server at /. In development, `npm run dev -w packages/web`
// proxies the API to a server on :8080.
export default defineConfig({
  plugins: [react()],
  build: {
    // No inline polyfill script: the page's CSP allows scripts from this origin only.
    modulePreload: { polyfill: false },
    sourcemap: false,
    // One entry chunk (React, router, query, dialogs, drag and drop) of ~160 KB gzipped; the chart loads on demand.
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: Object.fromEntries(['/api', '/auth', '/sdk', '/docs', '/health'].map((path) => [path, 'http://localhost:8080'])),
  },
});
