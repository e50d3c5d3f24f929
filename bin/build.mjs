// Bundles the CLI into dist/sluice.mjs and the server into dist/server.mjs (see bin/runBundle.mjs for why),
// and the web console into dist/console/, which the server serves at /console.
import { copyFileSync, mkdirSync } from "node:fs"
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
  build({ ...common, entryPoints: [path("../src/cli/main.ts")], outfile: path("../dist/sluice.mjs") }),
  // better-sqlite3 loads its compiled addon from its own package directory, so it stays in node_modules.
  build({ ...common, entryPoints: [path("../src/main.ts")], outfile: path("../dist/server.mjs"), external: ["better-sqlite3"] }),
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
// The upstream thread's entry, loaded by its URL next to the server's code (src/actors/upstreamThread.ts).
mkdirSync(path("../dist"), { recursive: true })
copyFileSync(path("../src/actors/upstreamWorker.mjs"), path("../dist/upstreamWorker.mjs"))
