#!/usr/bin/env node
// `npm run replay`: from its bundle, or from the sources when they are newer (see runBundle.mjs).
import { runBundle } from "./runBundle.mjs"

await runBundle("dist/replay.mjs", "src/replay.ts")
