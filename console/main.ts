import { adminView } from "./adminView.js"
import { ApiError } from "./api.js"
import { batchList } from "./batchList.js"
import { batchView } from "./batchView.js"
import { h, show } from "./dom.js"
import { responseList } from "./responseList.js"
import { responseView } from "./responseView.js"
import { session } from "./session.js"
import { signIn } from "./signIn.js"
import { streamList } from "./streamList.js"
import { streamView } from "./streamView.js"

const root = document.getElementById("app")!
const who = document.getElementById("who")!
let leaving = new AbortController()

const route = async () => {
  leaving.abort()
  leaving = new AbortController()
  const [path = "", query = ""] = location.hash.slice(1).split("?")
  const key = session.key()
  who.replaceChildren(
    key === null ? "" : h("button", { id: "sign-out", onclick: () => (session.signOut(), (location.hash = "#/signin")) }, "Sign out"),
  )
  try {
    if (path === "/admin") return await adminView(root, leaving.signal)
    if (key === null || path === "/signin") return signIn(root)
    const params = new URLSearchParams(query)
    const cursors = (params.get("after") ?? "").split(",").filter((id) => id !== "")
    const batch = /^\/batches\/(batch_[A-Za-z0-9]+)$/.exec(path)
    if (batch !== null) return await batchView(root, key, batch[1]!, leaving.signal)
    if (path === "/streams") return await streamList(root, key, Math.max(0, Math.floor(Number(params.get("skip") ?? 0)) || 0))
    const stream = /^\/streams\/(stream_[A-Za-z0-9]+)$/.exec(path)
    if (stream !== null) return await streamView(root, key, stream[1]!, cursors, leaving.signal)
    if (path === "/responses") return await responseList(root, key, cursors, params.get("stream_id") || null)
    const response = /^\/responses\/(resp_[A-Za-z0-9]+)$/.exec(path)
    if (response !== null) return await responseView(root, key, response[1]!, leaving.signal)
    return await batchList(root, key, cursors)
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signIn(root, `Your API key is no longer accepted: ${error.message}`)
    show(root, h("p", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)))
  }
}

addEventListener("hashchange", () => void route())
void route()
