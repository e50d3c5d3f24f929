import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

/** The CLI tests run the binary as installed, from its bundle: build the bundles from the sources under test. */
export default function setup() {
  execFileSync(process.execPath, [fileURLToPath(new URL("../../bin/build.mjs", import.meta.url))], { stdio: "inherit" })
}
