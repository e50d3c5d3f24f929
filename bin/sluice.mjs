#!/usr/bin/env node
import { runBundle } from "./runBundle.mjs"

await runBundle("dist/sluice.mjs", "src/cli/main.ts")
