import { Cause, FiberId, FiberRefs, HashMap, List, Logger, LogLevel } from "effect"

/**
 * A logger that writes its formatted lines to standard output together, once per turn of the event
 * loop: a busy instance logs a line per request, and one `console.log` each (a synchronous write to
 * a pipe) cost a tenth of the main thread under B12's readers. What is pending is written on exit.
 */
export const linesToStdout = <Message>(format: Logger.Logger<Message, string>): Logger.Logger<Message, void> => {
  let pending: Array<string> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const text = `${pending.join("\n")}\n`
    pending = []
    process.stdout.write(text)
  }
  process.on("exit", flush)
  return Logger.map(format, (line) => {
    pending.push(line)
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  })
}

/** `text` is one logfmt line per entry, `json` one JSON object; `pretty` spreads an entry over several lines, for a terminal. */
export const loggerLayer = (format: "text" | "json" | "pretty") =>
  format === "pretty"
    ? Logger.pretty
    : Logger.replace(Logger.defaultLogger, linesToStdout(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger))

/**
 * Writes one info line as `loggerLayer(format)` would, without running an effect: the HTTP fronts
 * (src/http/front) log a line per read they answer, and a fiber a line was a tenth of a read's cost.
 */
export const infoLines = (format: "text" | "json" | "pretty", minimum: LogLevel.LogLevel) => {
  const logger =
    format === "pretty" ? Logger.prettyLoggerDefault : linesToStdout(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger)
  const context = FiberRefs.empty()
  return (message: string, annotations: Record<string, unknown>) => {
    if (LogLevel.lessThan(LogLevel.Info, minimum)) return
    logger.log({
      fiberId: FiberId.make(0, 0),
      logLevel: LogLevel.Info,
      message,
      cause: Cause.empty,
      context,
      spans: List.empty(),
      annotations: HashMap.fromIterable(Object.entries(annotations)),
      date: new Date(),
    })
  }
}
