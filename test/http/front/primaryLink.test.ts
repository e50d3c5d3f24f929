import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import type { FromFront } from "../../../src/http/front/protocol.js"

const child = fileURLToPath(new URL("./fixtures/linkChild.ts", import.meta.url))

/** A front's link in a process of its own, and every message it sends, in order. */
const start = async () => {
  const front = fork(child, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] })
  const received: Array<FromFront> = []
  const waiters: Array<() => void> = []
  front.on("message", (message: FromFront) => {
    received.push(message)
    for (const wake of waiters.splice(0)) wake()
  })
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise<void>((resolve) => waiters.push(resolve))
  }
  await until(() => received.some((m) => m.t === "listening"))
  return { front, received, until }
}

const served = (messages: ReadonlyArray<FromFront>) => messages.flatMap((m) => (m.t === "served" ? [m] : []))

let running: ChildProcess | undefined
afterEach(() => {
  running?.kill()
  running = undefined
})

describe("a front's link to the dispatch process", () => {
  it("tells the reads served in one message, none lost", async () => {
    const { front, received, until } = await start()
    running = front
    front.send({ t: "serve", n: 50 })
    await until(() => served(received).reduce((sum, m) => sum + m.reads.length, 0) >= 50)
    expect(served(received).map((m) => m.reads.length)).toEqual([50])
    front.send({ t: "serve", n: 30 })
    await until(() => served(received).length === 2)
    expect(served(received).map((m) => m.reads.length)).toEqual([50, 30])
    expect(served(received)[0]!.reads.map((r) => r.seconds)).toEqual(Array.from({ length: 50 }, (_, i) => i / 1000))
  })

  it("tells the reads of many turns together, not a message a turn", async () => {
    const { front, received, until } = await start()
    running = front
    front.send({ t: "serve_in_turns", n: 10 })
    await until(() => served(received).reduce((sum, m) => sum + m.reads.length, 0) >= 10)
    // Ten turns take far less than the 100 ms the reads are held: one message, unless the machine
    // stalled the front that long between two turns. A message a turn would be ten.
    expect(served(received).length).toBeLessThan(10)
    expect(served(received).flatMap((m) => m.reads.map((r) => r.seconds))).toEqual(Array.from({ length: 10 }, (_, i) => (10 - i) / 1000))
  })

  it("sends an ask at once, ahead of the reads served before it", async () => {
    const { front, received, until } = await start()
    running = front
    front.send({ t: "serve_and_ask", n: 5 })
    await until(() => served(received).length === 1)
    const order = received.filter((m) => m.t !== "listening").map((m) => m.t)
    expect(order).toEqual(["asks", "served"])
  })

  it("tells the reads still held as the front exits", async () => {
    const { front, received } = await start()
    running = front
    const exited = new Promise((resolve) => front.once("exit", resolve))
    front.send({ t: "serve_and_exit", n: 7 })
    await exited
    expect(served(received).map((m) => m.reads.length)).toEqual([7])
  })
})
