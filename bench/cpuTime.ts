import { readFileSync, readdirSync } from "node:fs"

/** User plus system CPU time of one process (all its threads), in ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export const ownCpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** User plus system CPU time of a process's main thread alone (Sluice's dispatch thread), in ms, from /proc/<pid>/task/<pid>/stat. */
export const mainThreadCpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * How long a process's main thread (Sluice's dispatch thread) has waited, runnable, for a CPU, in ms:
 * the second field of /proc/<pid>/task/<pid>/schedstat (ns). A turn of its event loop delayed while
 * the thread waits for a core shows here, not in its own CPU time.
 */
export const mainThreadRunQueueMs = (pid: number) => Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e6

/** The processes a process started that are running now, from /proc/<pid>/task/<tid>/children. */
export const childPids = (pid: number): Array<number> => {
  const children: Array<number> = []
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim().split(" ")) if (child !== "") children.push(Number(child))
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return children
}

/**
 * The CPU time of a process and of the processes it started, in ms: a Sluice process's HTTP fronts
 * (src/http/front) are part of it. A child that exited between two readings takes its time with it,
 * so spans measured should not see fronts restart. The bench's own process, which starts everything
 * it measures, reads its own time with `ownCpuMs`.
 */
export const cpuMs = (pid: number) => {
  let total = ownCpuMs(pid)
  for (const child of childPids(pid)) {
    try {
      total += ownCpuMs(child)
    } catch {
      // It exited between the listing and the reading.
    }
  }
  return total
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
