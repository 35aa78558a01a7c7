import { fileURLToPath } from 'node:url';

/*
 * Files the server reads or starts, found from this file's folder (packages/server/dist/src/).
 * They are resolved here, at the root of src/, because dist/src/main.js is this folder's bundle
 * (scripts/bundle-server.mjs): a URL made relative to a module's own file in a subfolder would
 * point elsewhere once that module is inside the bundle.
 */

/** packages/web/dist, built by `npm run build` (and `npm start`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../../web/dist/', import.meta.url));

/** packages/server/dist/downloads, filled by `npm run build` and `npm start` (scripts/pack-clients.mjs). */
export const DOWNLOADS_DIR = fileURLToPath(new URL('../downloads/', import.meta.url));

/** The history writer's thread (modules/history/history.worker.ts), a bundle of its own beside main.js. */
export const HISTORY_WORKER_URL = new URL('./modules/history/history.worker.js', import.meta.url);

/** The thread that writes the experiments' intake (modules/experiments/intake.worker.ts), a bundle of its own beside main.js. */
export const INTAKE_WORKER_URL = new URL('./modules/experiments/intake.worker.js', import.meta.url);

/** The thread that computes experiments' results (modules/experiments/results.worker.ts), a bundle of its own beside main.js. */
export const RESULTS_WORKER_URL = new URL('./modules/experiments/results.worker.js', import.meta.url);

/** The thread that parses an import's YAML (modules/flags-as-code/yaml.worker.ts), a bundle of its own beside main.js. */
export const YAML_WORKER_URL = new URL('./modules/flags-as-code/yaml.worker.js', import.meta.url);
