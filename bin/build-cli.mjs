// Bundles the CLI into dist/sluice.mjs (see bin/sluice.mjs for why).
import { build } from "esbuild"

await build({
  entryPoints: [new URL("../src/cli/main.ts", import.meta.url).pathname],
  outfile: new URL("../dist/sluice.mjs", import.meta.url).pathname,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  // Bundled CommonJS dependencies call require(); ESM has none of its own.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
})
