import { adminView } from "./adminView.js"
import { ApiError } from "./api.js"
import { batchList } from "./batchList.js"
import { batchView } from "./batchView.js"
import { h, show } from "./dom.js"
import { session } from "./session.js"
import { signIn } from "./signIn.js"

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
    const batch = /^\/batches\/(batch_[A-Za-z0-9]+)$/.exec(path)
    if (batch !== null) return await batchView(root, key, batch[1]!, leaving.signal)
    const after = new URLSearchParams(query).get("after")
    return await batchList(root, key, after === null || after === "" ? [] : after.split(","))
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signIn(root, `Your API key is no longer accepted: ${error.message}`)
    show(root, h("p", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error)))
  }
}

addEventListener("hashchange", () => void route())
void route()
