// @ts-check
// A worker thread's TypeScript entry run from the sources (tsx, vitest): tsx's loader is registered in
// the thread first, then the entry its last argument names is loaded. From dist/ the entry's bundle
// runs instead (src/workerThread.ts).
import { register } from "tsx/esm/api"

register()
await import(/** @type {string} */ (process.argv[process.argv.length - 1]))
