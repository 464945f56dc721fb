// Builds the dashboard into web/dist, which `gpuscale serve --web-root web/dist` serves at "/".
// Relative asset URLs ("./assets/...") keep the build working under any mount path.
// `npm run dev` proxies /v1 to a local daemon (GPUSCALE_API, default http://127.0.0.1:8080).
import { defineConfig } from 'vite';

const api = process.env.GPUSCALE_API ?? 'http://127.0.0.1:8080';

export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 300 },
  server: { host: '127.0.0.1', proxy: { '/v1': api, '/healthz': api, '/readyz': api } },
});
