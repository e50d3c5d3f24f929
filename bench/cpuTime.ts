import { readFileSync } from "node:fs"

/** User plus system CPU time of a process (all its threads), in ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Bytes a process has handed to write calls, and how many calls (all its threads), from /proc/<pid>/io. */
export const writes = (pid: number) => {
  const io = Object.fromEntries(
    readFileSync(`/proc/${pid}/io`, "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split(": ") as [string, string]),
  )
  return { bytes: Number(io.wchar), calls: Number(io.syscw) }
}
