/** NATS subject filter semantics: `*` matches one token, a final `>` matches one or more tokens. */
export const matchSubject = (filter: string, subject: string): boolean => {
  const f = filter.split(".")
  const s = subject.split(".")
  for (let i = 0; i < f.length; i++) {
    const token = f[i]
    if (token === ">") return i === f.length - 1 && s.length > i
    if (i >= s.length) return false
    if (token !== "*" && token !== s[i]) return false
  }
  return f.length === s.length
}

/** The literal text every matching subject starts with: the tokens before the first wildcard. */
export const literalPrefix = (filter: string): string => {
  const tokens = filter.split(".")
  const wild = tokens.findIndex((t) => t === "*" || t === ">")
  if (wild === -1) return filter
  return tokens.slice(0, wild).map((t) => `${t}.`).join("")
}

/** Smallest string greater than every string starting with `prefix` (for a SQL range); undefined for "". */
export const prefixUpperBound = (prefix: string): string | undefined => {
  if (prefix === "") return undefined
  const last = prefix.charCodeAt(prefix.length - 1)
  return prefix.slice(0, -1) + String.fromCharCode(last + 1)
}

/** A SQL LIKE pattern (escape `\`) matching every subject the filter matches, and possibly more. */
export const likePattern = (filter: string): string =>
  filter
    .split(".")
    .map((t) => (t === "*" || t === ">" ? "%" : t.replace(/[\\%_]/g, (c) => `\\${c}`)))
    .join(".")
