import { createHash } from "node:crypto"
import { EventEmitter } from "node:events"
import net from "node:net"
import { Readable } from "node:stream"

/*
 * A minimal Redis client (RESP2 over one pipelined socket) in the shape BullMQ 6 asks of a client
 * (its IRedisClient), for when ioredis, BullMQ's optional peer, is not installed: only the commands
 * BullMQ issues, no reconnects, no cluster. Replies come back as ioredis gives them.
 */

type Arg = string | number | Buffer
type Reply = string | number | null | Error | ReadonlyArray<Reply>

const CLOSED = "Connection is closed."

/** Incremental RESP2 parser: whole replies out, partial ones wait for more bytes. */
class Parser {
  private buffer: Buffer = Buffer.alloc(0)

  feed(chunk: Buffer, onReply: (reply: Reply) => void): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk])
    let at = 0
    for (;;) {
      const parsed = this.parse(at)
      if (parsed === undefined) break
      at = parsed.end
      onReply(parsed.value)
    }
    this.buffer = at >= this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(at)
  }

  private parse(at: number): { value: Reply; end: number } | undefined {
    const buf = this.buffer
    if (at >= buf.length) return undefined
    const lineEnd = buf.indexOf("\r\n", at)
    if (lineEnd < 0) return undefined
    const line = buf.toString("utf8", at + 1, lineEnd)
    const next = lineEnd + 2
    switch (buf[at]) {
      case 0x2b: // +
        return { value: line, end: next }
      case 0x2d: // -
        return { value: new Error(line), end: next }
      case 0x3a: // :
        return { value: Number(line), end: next }
      case 0x24: {
        // $
        const length = Number(line)
        if (length < 0) return { value: null, end: next }
        if (next + length + 2 > buf.length) return undefined
        return { value: buf.toString("utf8", next, next + length), end: next + length + 2 }
      }
      case 0x2a: {
        // *
        const count = Number(line)
        if (count < 0) return { value: null, end: next }
        const items: Array<Reply> = []
        let pos = next
        for (let i = 0; i < count; i++) {
          const item = this.parse(pos)
          if (item === undefined) return undefined
          items.push(item.value)
          pos = item.end
        }
        return { value: items, end: pos }
      }
      default:
        throw new Error(`unexpected RESP type byte ${buf[at]}`)
    }
  }
}

const encode = (args: ReadonlyArray<Arg>): string | Buffer => {
  let text = `*${args.length}\r\n`
  let parts: Array<Buffer> | undefined
  for (const arg of args) {
    if (Buffer.isBuffer(arg)) {
      parts ??= []
      parts.push(Buffer.from(`${text}$${arg.length}\r\n`), arg)
      text = "\r\n"
    } else {
      const s = String(arg)
      text += `$${Buffer.byteLength(s)}\r\n${s}\r\n`
    }
  }
  if (parts === undefined) return text
  parts.push(Buffer.from(text))
  return Buffer.concat(parts)
}

interface Waiter {
  readonly resolve: (reply: Reply) => void
  readonly reject: (error: Error) => void
}

interface Script {
  readonly sha: string
  readonly lua: string
  readonly keys: number
}

const scriptArgs = (args: ReadonlyArray<unknown>): Array<Arg> => {
  const flat = args.length === 1 && Array.isArray(args[0]) ? (args[0] as ReadonlyArray<unknown>) : args
  return flat.map((a) => (Buffer.isBuffer(a) ? a : a === undefined || a === null ? "" : String(a)))
}

const asObject = (reply: Reply): Record<string, string> => {
  const out: Record<string, string> = {}
  const flat = (reply ?? []) as ReadonlyArray<string>
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!
  return out
}

/** Commands queued and sent together: `multi` wraps them in MULTI/EXEC, `pipeline` sends them as they are. */
class Batch {
  private readonly commands: Array<{ readonly args: ReadonlyArray<Arg>; readonly map: (r: Reply) => unknown }> = []
  constructor(
    private readonly client: RespClient,
    private readonly atomic: boolean,
  ) {}
  private add(args: ReadonlyArray<Arg>, map: (r: Reply) => unknown = (r) => r) {
    this.commands.push({ args, map })
    return this
  }
  hgetall(key: string) {
    return this.add(["HGETALL", key], asObject)
  }
  hset(key: string, data: Record<string, string | number>) {
    return this.add(["HSET", key, ...Object.entries(data).flat()])
  }
  hscan(key: string, cursor: string | number, options?: { COUNT?: number }) {
    return this.add(["HSCAN", key, cursor, ...(options?.COUNT === undefined ? [] : ["COUNT", options.COUNT])])
  }
  smembers(key: string) {
    return this.add(["SMEMBERS", key])
  }
  sscan(key: string, cursor: string | number, options?: { COUNT?: number }) {
    return this.add(["SSCAN", key, cursor, ...(options?.COUNT === undefined ? [] : ["COUNT", options.COUNT])])
  }
  zrange(key: string, start: number, end: number) {
    return this.add(["ZRANGE", key, start, end])
  }
  lrange(key: string, start: number, end: number) {
    return this.add(["LRANGE", key, start, end])
  }
  llen(key: string) {
    return this.add(["LLEN", key])
  }
  del(...keys: Array<string>) {
    return keys.length === 0 ? this : this.add(["DEL", ...keys])
  }
  runCommand(name: string, args: ReadonlyArray<unknown>) {
    const script = this.client.script(name)
    const argv = scriptArgs(args)
    return this.add(["EVALSHA", script.sha, script.keys, ...argv])
  }
  async exec(): Promise<Array<[Error | null, unknown]> | null> {
    if (!this.atomic) {
      return Promise.all(
        this.commands.map(({ args, map }) =>
          this.client.send(args).then(
            (r): [Error | null, unknown] => [null, map(r)],
            (e: Error): [Error | null, unknown] => [e, null],
          ),
        ),
      )
    }
    void this.client.send(["MULTI"]).catch(() => undefined)
    for (const { args } of this.commands) void this.client.send(args).catch(() => undefined)
    const results = (await this.client.send(["EXEC"])) as ReadonlyArray<Reply> | null
    if (results === null) return null
    return results.map((r, i): [Error | null, unknown] => (r instanceof Error ? [r, null] : [null, this.commands[i]!.map(r)]))
  }
}

export interface RespClientOptions {
  readonly host?: string
  readonly port?: number
  readonly connectionName?: string
  readonly [key: string]: unknown
}

export class RespClient extends EventEmitter {
  status = "connecting"
  readonly isCluster = false
  options: Record<string, unknown>
  private readonly socket: net.Socket
  private readonly parser = new Parser()
  private readonly waiting: Array<Waiter> = []
  private head = 0
  private corked = false
  private readonly scripts: Map<string, Script>
  private readonly ready: Promise<void>

  constructor(options: RespClientOptions, scripts?: Map<string, Script>) {
    super()
    this.options = { ...options }
    this.scripts = new Map(scripts)
    this.socket = net.createConnection({ host: options.host ?? "127.0.0.1", port: options.port ?? 6379 })
    this.socket.setNoDelay(true)
    this.socket.on("data", (chunk: Buffer) => this.parser.feed(chunk, (reply) => this.settle(reply)))
    this.socket.on("error", (error) => {
      if (this.listenerCount("error") > 0) this.emit("error", error)
    })
    this.socket.on("close", () => this.closed())
    this.ready = new Promise((resolve, reject) => {
      this.socket.once("connect", () => {
        this.status = "ready"
        const name = options.connectionName
        const named = typeof name === "string" ? this.send(["CLIENT", "SETNAME", name]).then(() => undefined) : Promise.resolve()
        void named.then(() => {
          this.emit("ready")
          resolve()
        }, reject)
      })
      this.socket.once("close", () => reject(new Error(CLOSED)))
    })
    this.ready.catch(() => undefined)
  }

  private settle(reply: Reply): void {
    const waiter = this.waiting[this.head++]
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head)
      this.head = 0
    }
    if (waiter === undefined) return
    if (reply instanceof Error) waiter.reject(reply)
    else waiter.resolve(reply)
  }

  private closed(): void {
    this.status = "end"
    const pending = this.waiting.splice(this.head)
    this.head = 0
    this.waiting.length = 0
    for (const w of pending) w.reject(new Error(CLOSED))
    this.emit("close")
    this.emit("end")
  }

  /** Sends one command; commands written in the same tick leave in one write. */
  send(args: ReadonlyArray<Arg>): Promise<Reply> {
    if (this.status === "end") return Promise.reject(new Error(CLOSED))
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject })
      if (!this.corked) {
        this.corked = true
        this.socket.cork()
        process.nextTick(() => {
          this.corked = false
          this.socket.uncork()
        })
      }
      this.socket.write(encode(args))
    })
  }

  script(name: string): Script {
    const script = this.scripts.get(name)
    if (script === undefined) throw new Error(`BullMQ: unknown command "${name}"`)
    return script
  }

  connect(): Promise<void> {
    return this.ready
  }
  disconnect(): void {
    this.status = "end"
    this.socket.destroy()
  }
  async quit(): Promise<string> {
    if (this.status === "end") return "OK"
    await this.send(["QUIT"]).catch(() => undefined)
    this.disconnect()
    return "OK"
  }
  duplicate(options?: RespClientOptions): RespClient {
    return new RespClient({ ...this.options, ...options }, this.scripts)
  }

  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void {
    const sha = createHash("sha1").update(definition.lua).digest("hex")
    this.scripts.set(name, { sha, lua: definition.lua, keys: definition.numberOfKeys })
    ;(this as unknown as Record<string, unknown>)[name] = (...args: Array<unknown>) => this.runCommand(name, args)
    // Loaded up front, so EVALSHA inside a pipeline or MULTI finds it.
    void this.send(["SCRIPT", "LOAD", definition.lua]).catch(() => undefined)
  }
  async runCommand(name: string, args: ReadonlyArray<unknown>): Promise<unknown> {
    const script = this.script(name)
    const argv = scriptArgs(args)
    try {
      return await this.send(["EVALSHA", script.sha, script.keys, ...argv])
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes("NOSCRIPT")) throw error
      return this.send(["EVAL", script.lua, script.keys, ...argv])
    }
  }
  multi(): Batch {
    return new Batch(this, true)
  }
  pipeline(): Batch {
    return new Batch(this, false)
  }

  hgetall = async (key: string) => asObject(await this.send(["HGETALL", key]))
  hget = (key: string, field: string) => this.send(["HGET", key, field])
  hmget = (key: string, ...fields: Array<string>) => this.send(["HMGET", key, ...fields])
  hset = (key: string, data: Record<string, string | number>) => this.send(["HSET", key, ...Object.entries(data).flat()])
  hdel = (key: string, ...fields: Array<string>) => this.send(["HDEL", key, ...fields])
  hexists = (key: string, field: string) => this.send(["HEXISTS", key, field])
  get = (key: string) => this.send(["GET", key])
  set = (key: string, value: string | number, options?: { PX?: number; EX?: number }) =>
    this.send(["SET", key, value, ...(options?.PX !== undefined ? ["PX", options.PX] : options?.EX !== undefined ? ["EX", options.EX] : [])])
  del = (...keys: Array<string>) => (keys.length === 0 ? Promise.resolve(0) : this.send(["DEL", ...keys]))
  zrange = (key: string, start: number, end: number, options?: { WITHSCORES?: boolean }) =>
    this.send(["ZRANGE", key, start, end, ...(options?.WITHSCORES === true ? ["WITHSCORES"] : [])])
  zrevrange = (key: string, start: number, end: number, options?: { WITHSCORES?: boolean }) =>
    this.send(["ZREVRANGE", key, start, end, ...(options?.WITHSCORES === true ? ["WITHSCORES"] : [])])
  zcard = (key: string) => this.send(["ZCARD", key])
  zscore = (key: string, member: string) => this.send(["ZSCORE", key, member])
  lrange = (key: string, start: number, end: number) => this.send(["LRANGE", key, start, end])
  llen = (key: string) => this.send(["LLEN", key])
  ltrim = (key: string, start: number, end: number) => this.send(["LTRIM", key, start, end])
  lpos = (key: string, value: string) => this.send(["LPOS", key, value])
  smembers = (key: string) => this.send(["SMEMBERS", key])
  xadd = (key: string, id: string, fields: Record<string, string | number>, options?: { MAXLEN?: number; approximate?: boolean }) =>
    this.send([
      "XADD",
      key,
      ...(options?.MAXLEN === undefined ? [] : ["MAXLEN", ...(options.approximate === false ? [] : ["~"]), options.MAXLEN]),
      id,
      ...Object.entries(fields).flat(),
    ])
  xread = (streams: ReadonlyArray<{ key: string; id: string }>, options?: { BLOCK?: number; COUNT?: number }) =>
    this.send([
      "XREAD",
      ...(options?.COUNT === undefined ? [] : ["COUNT", options.COUNT]),
      ...(options?.BLOCK === undefined ? [] : ["BLOCK", options.BLOCK]),
      "STREAMS",
      ...streams.map((s) => s.key),
      ...streams.map((s) => s.id),
    ])
  xtrim = (key: string, strategy: "MAXLEN", threshold: number, options?: { approximate?: boolean }) =>
    this.send(["XTRIM", key, strategy, ...(options?.approximate === false ? [] : ["~"]), threshold])
  bzpopmin = (key: string, timeout: number) =>
    this.send(["BZPOPMIN", key, timeout]).catch((error: Error) => {
      if (error.message === CLOSED && this.status === "end") return null
      throw error
    })
  info = () => this.send(["INFO"])
  clientSetName = (name: string) => this.send(["CLIENT", "SETNAME", name])
  clientList = () => this.send(["CLIENT", "LIST"])
  clientInfo = () => this.send(["CLIENT", "INFO"])
  scan = async (cursor: string | number, options: { MATCH?: string; COUNT?: number }) =>
    (await this.send([
      "SCAN",
      cursor,
      ...(options.MATCH === undefined ? [] : ["MATCH", options.MATCH]),
      ...(options.COUNT === undefined ? [] : ["COUNT", options.COUNT]),
    ])) as [string, Array<string>]
  scanStream = (options: { match: string; count?: number }): Readable => {
    const scan = this.scan
    let cursor = "0"
    let started = false
    return new Readable({
      objectMode: true,
      read() {
        if (started && cursor === "0") return void this.push(null)
        started = true
        scan(cursor, { MATCH: options.match, ...(options.count === undefined ? {} : { COUNT: options.count }) }).then(
          ([next, keys]) => {
            cursor = next
            this.push(keys)
            if (next === "0") this.push(null)
          },
          (error: Error) => this.destroy(error),
        )
      },
    })
  }
}
