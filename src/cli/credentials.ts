import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"

export interface Credentials {
  readonly apiKey: string | undefined
  readonly baseUrl: string
  /** Where the stored credentials live, for messages. */
  readonly file: string
}

interface Stored {
  readonly api_key?: string
  readonly base_url?: string
}

/** `SLUICE_CONFIG` names the file outright (tests use it); otherwise the XDG config folder. */
export const credentialsFile = (env: NodeJS.ProcessEnv = process.env): string =>
  env["SLUICE_CONFIG"] ??
  join(env["XDG_CONFIG_HOME"] ?? join(homedir(), ".config"), "sluice", "credentials.json")

const readStored = (file: string): Stored => {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"))
    return typeof parsed === "object" && parsed !== null ? (parsed as Stored) : {}
  } catch {
    return {}
  }
}

/** The environment overrides what `sluice auth login` stored. */
export const loadCredentials = (env: NodeJS.ProcessEnv = process.env): Credentials => {
  const file = credentialsFile(env)
  const stored = readStored(file)
  return {
    apiKey: env["SLUICE_API_KEY"] || stored.api_key,
    baseUrl: env["SLUICE_BASE_URL"] || stored.base_url || DEFAULT_BASE_URL,
    file,
  }
}

/** Written to a temporary file and renamed, readable by the owner only: it holds a secret. */
export const saveCredentials = (file: string, apiKey: string, baseUrl: string): void => {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify({ api_key: apiKey, base_url: baseUrl }, null, 2)}\n`, { mode: 0o600 })
  chmodSync(temporary, 0o600)
  renameSync(temporary, file)
}

export const forgetCredentials = (file: string): void => rmSync(file, { force: true })
