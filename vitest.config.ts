import { defineConfig } from "vitest/config"
import LongestFirst from "./test/support/longestFirst.js"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/buildCli.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 3,
    minWorkers: 1,
    sequence: { sequencer: LongestFirst },
  },
})
