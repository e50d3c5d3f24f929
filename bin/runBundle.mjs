// Runs an entry point from its esbuild bundle (dist/, built by `npm run build` and on `npm ci`). Loading Effect
// module by module through tsx takes seconds and much memory; the bundle starts at once.
// When any source file is newer than the bundle, the sources run through tsx instead, so an edit is never
// hidden behind a stale bundle.
import { readdirSync, statSync } from "node:fs"
import { fileURLToPath } from "node:url"

const sources = fileURLToPath(new URL("../src", import.meta.url))

const newestSource = (dir) => {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs)
  }
  return newest
}

const modifiedAt = (path) => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return -1
  }
}

/** `bundle` and `source` are paths relative to the repository root. */
export const runBundle = async (bundle, source) => {
  const bundlePath = fileURLToPath(new URL(`../${bundle}`, import.meta.url))
  if (modifiedAt(bundlePath) >= newestSource(sources)) {
    await import(bundlePath)
  } else {
    const { register } = await import("tsx/esm/api")
    register()
    await import(fileURLToPath(new URL(`../${source}`, import.meta.url)))
  }
}
