import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { SluiceClient } from "../sdk/index.js"
import { credentialsFile, DEFAULT_BASE_URL, forgetCredentials, loadCredentials, saveCredentials } from "./credentials.js"
import { sayRetrying } from "./clients.js"
import { group, leaf } from "./commandTree.js"
import { sdk } from "./failure.js"
import { note, out } from "./output.js"

const login = leaf(
  "Check an API key against the server and store it with the base URL",
  Command.make(
  "login",
  {
    apiKey: Options.text("api-key").pipe(Options.withDescription("Your Sluice API key")),
    baseUrl: Options.text("base-url").pipe(
      Options.withDescription(`The API's base URL (default ${DEFAULT_BASE_URL}, or SLUICE_BASE_URL)`),
      Options.optional,
    ),
  },
  ({ apiKey, baseUrl }) =>
    Effect.gen(function* () {
      const url = Option.getOrElse(baseUrl, () => loadCredentials().baseUrl)
      const client = new SluiceClient({ apiKey, baseUrl: url, maxRetries: 1, onRetry: sayRetrying })
      // A key is stored only once the server has accepted it.
      yield* sdk(() => client.list({ limit: 1 }).next())
      const file = credentialsFile()
      saveCredentials(file, apiKey, url)
      yield* note(`Logged in to ${url}; the key is stored in ${file}`)
    }),
  ),
)

const status = leaf(
  "Show which base URL and key the CLI uses",
  Command.make("status", {}, () =>
  Effect.gen(function* () {
    const { apiKey, baseUrl, file } = loadCredentials()
    yield* out(`base URL: ${baseUrl}`)
    yield* out(`API key: ${apiKey === undefined ? "none" : `${apiKey.slice(0, 10)}…`} (stored in ${file}; SLUICE_API_KEY and SLUICE_BASE_URL override it)`)
  }),
  ),
)

const logout = leaf(
  "Forget the stored key",
  Command.make("logout", {}, () =>
  Effect.gen(function* () {
    const file = credentialsFile()
    forgetCredentials(file)
    yield* note(`Removed ${file}`)
  }),
  ),
)

const auth = group("auth", "Store, show or forget your API key", [login.node, status.node, logout.node])

export const authNode = auth.node
export const authCommand = auth.own.pipe(Command.withSubcommands([login.command, status.command, logout.command]))
