type Child = Node | string | number | null | undefined | false
type Attrs = Record<string, string | number | boolean | EventListener | undefined>

/** One element, its attributes (`on…` are listeners) and children: the console's whole view layer. */
export const h = (tag: string, attrs: Attrs = {}, ...children: Array<Child | Array<Child>>): HTMLElement => {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue
    if (typeof value === "function") el.addEventListener(name.slice(2).toLowerCase(), value)
    else el.setAttribute(name, value === true ? "" : String(value))
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    el.append(child instanceof Node ? child : String(child))
  }
  return el
}

export const show = (root: HTMLElement, ...children: Array<Node>) => root.replaceChildren(...children)

/** A progress bar: completed in green, failed in red after it. */
export const bar = (done: number, failed: number, total: number, big = false) => {
  const pct = (n: number) => `${total === 0 ? 0 : (100 * n) / total}%`
  return h(
    "div",
    { class: big ? "bar big" : "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": total, "aria-valuenow": done + failed },
    h("span", { style: `width: ${pct(done)}` }),
    h("span", { class: "failed", style: `left: ${pct(done)}; width: ${pct(failed)}` }),
  )
}

export const when = (unixSeconds: number | null) => (unixSeconds === null ? "" : new Date(unixSeconds * 1000).toLocaleString())

/** A stream's times are ISO-8601 strings, where batches' and responses' are Unix seconds. */
export const whenIso = (iso: string | null) => (iso === null ? "" : new Date(iso).toLocaleString())

export const usd = (n: number) => `$${n.toFixed(n < 0.01 && n > 0 ? 6 : 4)}`

/** A count of tokens, grouped by thousands whatever the browser's language. */
export const tokens = (n: number) => n.toLocaleString("en-US")
