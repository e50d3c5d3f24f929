import { createServer } from "node:net"

// Linux hands out 32768–60999 for outgoing connections and for listen(0). A port probed free in that
// range can be taken by another test's connection or listener before the process meant for it binds
// (CI once failed on exactly that), so the tests' servers take ports below it.
const LOW = 20_000
const HIGH = 32_000
const handedOut = new Set<number>()

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** A loopback port that was free just now, outside the ephemeral range, not handed out before by this process. */
export const freePort = async (): Promise<number> => {
  for (let tries = 0; tries < 1000; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW))
    if (handedOut.has(port)) continue
    if (await bindable(port)) {
      handedOut.add(port)
      return port
    }
  }
  throw new Error(`no free loopback port between ${LOW} and ${HIGH}`)
}

/** Whether a process's output says its listen failed because the port was taken meanwhile. */
export const lostPortRace = (output: string): boolean => output.includes("EADDRINUSE") || / is already in use: /.test(output)
