#!/usr/bin/env node
// `npm start`: the server from its bundle, or from the sources when they are newer (see runBundle.mjs).
import { runBundle } from "./runBundle.mjs"

await runBundle("dist/server.mjs", "src/main.ts")
