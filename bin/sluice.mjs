#!/usr/bin/env node
// Runs the CLI from its esbuild bundle (dist/, built by `npm run build:cli` and on `npm ci`): loading Effect
// module by module through tsx takes seconds per command, the bundle half a second. When any source file is
// newer than the bundle, the sources run through tsx instead, so an edit is never hidden behind a stale bundle.
import { readdirSync, statSync } from "node:fs"
import { fileURLToPath } from "node:url"

const bundle = fileURLToPath(new URL("../dist/sluice.mjs", import.meta.url))
const sources = fileURLToPath(new URL("../src", import.meta.url))

const newestSource = (dir) => {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs)
  }
  return newest
}

const bundleTime = (() => {
  try {
    return statSync(bundle).mtimeMs
  } catch {
    return -1
  }
})()

if (bundleTime >= newestSource(sources)) {
  await import(bundle)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/cli/main.ts")
}
