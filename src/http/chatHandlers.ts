import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SluiceApi } from "./api.js"
import { authenticate } from "./auth.js"
import { ChatCompletions } from "./chatCompletions.js"
import { respondRaw } from "./respond.js"

export const ChatLive = HttpApiBuilder.group(SluiceApi, "chat", (handlers) =>
  Effect.map(ChatCompletions, (chat) => handlers.handleRaw("completions", () => respondRaw(Effect.flatMap(authenticate, chat.complete)))),
)
