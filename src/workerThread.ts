import { Worker, type WorkerOptions } from "node:worker_threads"

/**
 * A worker thread running the TypeScript module `source` beside `here` (the caller's `import.meta.url`):
 * from dist/, its bundle `bundle` next to the server's; from the sources, `source` through tsx.
 */
export const typeScriptWorker = (here: string, source: string, bundle: string, options: WorkerOptions = {}) =>
  here.endsWith(".ts")
    ? new Worker(new URL("./tsWorker.mjs", import.meta.url), { ...options, argv: [new URL(source, here).href] })
    : new Worker(new URL(bundle, here), options)
