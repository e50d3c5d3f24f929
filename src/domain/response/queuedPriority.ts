import { DEFAULT_PRIORITY, type Priority } from "../scheduling/priority.js"

/** How a `POST /v1/responses` request is served, as far as its priority goes. */
export type ResponseRoute =
  | { readonly _tag: "StreamItem"; readonly streamPriority: Priority }
  | { readonly _tag: "Background" }
  | { readonly _tag: "Flex" }
  | { readonly _tag: "Interactive" }

export const notQueuedMessage =
  "'priority' orders queued responses (background: true, or an item of a stream named in metadata.stream_id); " +
  "a flex request runs as standard and an interactive one ahead of every priority: send it without 'priority'"

/**
 * The priority a response runs at: its own, else its stream's, else standard. Only a queued response
 * waits among priorities; a flex request or an interactive one naming another priority is refused rather
 * than run otherwise than it asked (standard, which a flex request runs at, is accepted from either).
 */
export const responsePriority = (
  asked: Priority | undefined,
  route: ResponseRoute,
): { readonly _tag: "Runs"; readonly priority: Priority } | { readonly _tag: "Refused"; readonly message: string } => {
  switch (route._tag) {
    case "StreamItem":
      return { _tag: "Runs", priority: asked ?? route.streamPriority }
    case "Background":
      return { _tag: "Runs", priority: asked ?? DEFAULT_PRIORITY }
    case "Flex":
    case "Interactive":
      return asked === undefined || asked === DEFAULT_PRIORITY ? { _tag: "Runs", priority: DEFAULT_PRIORITY } : { _tag: "Refused", message: notQueuedMessage }
  }
}
