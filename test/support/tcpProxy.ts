import { createConnection, createServer, type Server, type Socket } from "node:net"
import { freePort, lostPortRace } from "./ports.js"

/** How a partition ends: the held connections carry on where they stopped, or they are gone and the clients reconnect. */
export type Healing = "resume" | "reset"

export interface TcpProxy {
  /** The loopback port to connect to instead of the target's. */
  readonly port: number
  /**
   * A partition: no byte passes either way, and both ends of every connection stay open, neither read nor
   * written, so neither side learns anything (no FIN, no RST). New connections are accepted and held the same way.
   */
  cut(): void
  /** Ends the partition; a no-op when none is on. */
  heal(how: Healing): void
  readonly isCut: () => boolean
  /** Connections made from now on go to this port instead, as a load balancer's would after a failover. */
  retarget(port: number): void
  /** Stops listening and destroys every connection. */
  close(): Promise<void>
}

interface Link {
  readonly client: Socket
  upstream: Socket | undefined
}

/** A TCP proxy on a free loopback port, forwarding every connection to `target` on 127.0.0.1. */
export const startTcpProxy = async (initialTarget: number): Promise<TcpProxy> => {
  let target = initialTarget
  const links = new Set<Link>()
  let cut = false

  const drop = (link: Link, how: "close" | "reset" = "close") => {
    links.delete(link)
    for (const socket of [link.client, link.upstream]) {
      if (socket === undefined || socket.destroyed) continue
      // A connection that timed out on the far side answers the next segment with a reset, not a FIN.
      if (how === "reset") socket.resetAndDestroy()
      else socket.destroy()
    }
  }
  // Paused, a socket is not read at all (libuv stops reading): what the peer sends stays in the kernel's
  // buffers, as it would sit unacknowledged in a partition, and an end or reset is not seen until it resumes.
  const forward = (from: Socket, to: Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause()
    })
    to.on("drain", () => {
      if (!cut) from.resume()
    })
  }
  const connectUpstream = (link: Link) => {
    const upstream = createConnection({ port: target, host: "127.0.0.1" })
    link.upstream = upstream
    upstream.on("error", () => drop(link))
    upstream.on("close", () => drop(link))
    forward(link.client, upstream)
    forward(upstream, link.client)
    if (cut) upstream.pause()
    else link.client.resume()
  }

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    const link: Link = { client, upstream: undefined }
    links.add(link)
    client.on("error", () => drop(link))
    client.on("close", () => drop(link))
    // A connection made during a partition gets no further than the accept: nothing reaches the target.
    if (!cut) connectUpstream(link)
  })
  let port = await freePort()
  for (let attempt = 1; ; attempt++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject)
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject)
          resolve()
        })
      })
      break
    } catch (error) {
      if (attempt >= 5 || !(error instanceof Error) || !lostPortRace(String((error as NodeJS.ErrnoException).code))) throw error
      port = await freePort()
    }
  }

  return {
    port,
    cut: () => {
      cut = true
      for (const link of links) {
        link.client.pause()
        link.upstream?.pause()
      }
    },
    heal: (how) => {
      if (!cut) return
      cut = false
      for (const link of [...links]) {
        if (how === "reset") drop(link, "reset")
        else if (link.upstream === undefined) connectUpstream(link)
        else {
          link.client.resume()
          link.upstream.resume()
        }
      }
    },
    isCut: () => cut,
    retarget: (port) => {
      target = port
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const link of [...links]) drop(link)
        server.close(() => resolve())
      }),
  }
}
