// Bundles the CLI into dist/sluice.mjs, the server into dist/server.mjs and `npm run replay` into dist/replay.mjs
// (see bin/runBundle.mjs for why), the web console into dist/console/ (which the server serves at /console), and
// compiles the SDK (`sluice/sdk`) to JavaScript with its .d.ts files in dist/lib.
import { execFileSync } from "node:child_process"
import { copyFileSync, mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { build } from "esbuild"

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  // Bundled CommonJS dependencies call require(); ESM has none of its own.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
}
const path = (relative) => new URL(relative, import.meta.url).pathname

await Promise.all([
  // better-sqlite3 loads its compiled addon from its own package directory, so it stays in node_modules.
  build({ ...common, entryPoints: [path("../src/cli/main.ts")], outfile: path("../dist/sluice.mjs"), external: ["better-sqlite3"] }),
  build({ ...common, entryPoints: [path("../src/main.ts")], outfile: path("../dist/server.mjs"), external: ["better-sqlite3"] }),
  // The HTTP fronts' program, forked by the server from next to its own bundle (src/http/front/fronts.ts).
  build({ ...common, entryPoints: [path("../src/http/front/frontMain.ts")], outfile: path("../dist/httpFront.mjs"), external: ["better-sqlite3"] }),
  build({ ...common, entryPoints: [path("../src/replay.ts")], outfile: path("../dist/replay.mjs"), external: ["better-sqlite3"] }),
  // The create thread's program, started by the server from next to its own bundle (src/http/createBodies.ts).
  build({ ...common, entryPoints: [path("../src/http/createBodyWorker.ts")], outfile: path("../dist/createBodyWorker.mjs") }),
  build({
    entryPoints: [path("../console/main.ts")],
    outfile: path("../dist/console/console.js"),
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: true,
    logLevel: "warning",
  }),
])
for (const file of ["index.html", "console.css"]) copyFileSync(path(`../console/${file}`), path(`../dist/console/${file}`))
// The worker threads' entries, loaded by their URLs next to the server's code (src/actors/upstreamThread.ts, src/eventlog/walCheckpoints.ts).
mkdirSync(path("../dist"), { recursive: true })
copyFileSync(path("../src/actors/upstreamWorker.mjs"), path("../dist/upstreamWorker.mjs"))
copyFileSync(path("../src/eventlog/walCheckpointWorker.mjs"), path("../dist/walCheckpointWorker.mjs"))

// TypeScript is a development dependency: an install without it (`npm ci --omit=dev`, the Docker image) runs the
// server and the CLI from their bundles and has no use for the SDK's own build.
const tsc = (() => {
  try {
    return createRequire(import.meta.url).resolve("typescript/bin/tsc")
  } catch {
    return undefined
  }
})()
if (tsc === undefined) console.log("typescript is not installed: dist/lib (the SDK's JavaScript) is not built")
else execFileSync(process.execPath, [tsc, "-p", path("../tsconfig.sdk.json")], { stdio: "inherit" })
