/** A webhook URL: http(s), with a host, no credentials. Answers the URL or why it is refused. */
export const parseWebhookUrl = (text: unknown): { readonly url: URL } | { readonly refused: string } => {
  if (typeof text !== "string") return { refused: "'url' must be a string" }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { refused: `'url' is not a URL: '${text}'` }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { refused: `'url' must be http or https, got '${url.protocol.slice(0, -1)}'` }
  if (url.username !== "" || url.password !== "") return { refused: "'url' must not hold credentials" }
  return { url }
}

export const portOf = (url: URL): number => (url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80)
