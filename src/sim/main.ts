import { CLI_USAGE, simOptionsFromArgs } from "./CliOptions.js"
import { startSimulator } from "./Simulator.js"

const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) {
  console.log(CLI_USAGE)
  process.exit(0)
}

const sim = await Promise.resolve()
  .then(() => startSimulator(simOptionsFromArgs(args, process.env)))
  .catch((error: unknown) => {
    console.error(`sim: ${error instanceof Error ? error.message : String(error)}\n${CLI_USAGE}`)
    return process.exit(2)
  })

console.log(`sim listening on ${sim.url}`)

let stopping = false
const stop = (): void => {
  if (stopping) return
  stopping = true
  sim.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error("sim: close failed", error)
      process.exit(1)
    },
  )
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
