import { accessSync, constants } from "node:fs"
import { join } from "node:path"

/** Where Debian's `prometheus` package (which .ci/run installs) put one of its programs, if anywhere. */
export const prometheusBinary = (name: "prometheus" | "promtool"): string | undefined => {
  for (const dir of [...(process.env.PATH ?? "").split(":").filter((d) => d !== ""), "/usr/bin"]) {
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {
      // not in this directory
    }
  }
  return undefined
}

/**
 * Whether a test that needs the program is skipped here: only outside CI, and only when the program is
 * absent, saying so. In CI (CI=true) the test runs and fails with `absentReason`.
 */
export const skipWithout = (name: "prometheus" | "promtool", binary: string | undefined): boolean => {
  if (binary !== undefined || process.env.CI === "true") return false
  console.warn(`skipped: ${absentReason(name)}`)
  return true
}

export const absentReason = (name: "prometheus" | "promtool") =>
  `${name} is not installed: apt-get install --no-install-recommends prometheus (Debian's package, with promtool; .ci/run installs it in CI)`
