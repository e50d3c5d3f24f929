import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"

/** Where a consumer of the completion-events feed keeps the last `completion_id` it handled, by key. */
export interface CheckpointStore {
  load(key: string): string | undefined | Promise<string | undefined>
  save(key: string, completionId: string): void | Promise<void>
  clear(key: string): void | Promise<void>
}

/** sference's key: the base URL, the stream (or `__responses_events__` for the feed outside streams) and the consumer's name. */
export const checkpointKey = (baseUrl: string, streamId: string | undefined, consumer: string): string =>
  `${baseUrl.replace(/\/+$/, "")}:${streamId ?? "__responses_events__"}:${consumer}`

/** `SLUICE_CHECKPOINTS` names the file outright; otherwise `checkpoints.json` in the XDG config folder's `sluice`. */
export const defaultCheckpointsFile = (env: NodeJS.ProcessEnv = process.env): string =>
  env["SLUICE_CHECKPOINTS"] || join(env["XDG_CONFIG_HOME"] || join(homedir(), ".config"), "sluice", "checkpoints.json")

/** A file's checkpoints are read and written at once. */
export interface FileCheckpointStore extends CheckpointStore {
  load(key: string): string | undefined
  save(key: string, completionId: string): void
  clear(key: string): void
}

interface Entry {
  readonly last_completion_id?: unknown
  readonly updated_at?: unknown
}

const readAll = (file: string): Record<string, Entry> => {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"))
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, Entry>) : {}
  } catch {
    return {}
  }
}

// Written whole to a temporary file and renamed, so a consumer killed mid-write leaves the previous checkpoint.
const writeAll = (file: string, all: Record<string, Entry>) => {
  mkdirSync(dirname(file), { recursive: true })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(all, null, 2)}\n`)
  renameSync(temporary, file)
}

/**
 * Checkpoints in one JSON file, sference's format: `{key: {last_completion_id, updated_at}}`. Each save
 * reads and rewrites the file; consumers sharing it each keep their own key.
 */
export const fileCheckpoints = (file: string = defaultCheckpointsFile()): FileCheckpointStore => ({
  load: (key) => {
    const id = readAll(file)[key]?.last_completion_id
    return typeof id === "string" && id !== "" ? id : undefined
  },
  save: (key, completionId) => {
    writeAll(file, { ...readAll(file), [key]: { last_completion_id: completionId, updated_at: new Date().toISOString() } })
  },
  clear: (key) => {
    const all = readAll(file)
    if (!(key in all)) return
    delete all[key]
    writeAll(file, all)
  },
})
