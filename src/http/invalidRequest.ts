import { Option, ParseResult, SchemaAST as AST } from "effect"
import { SluiceApi } from "./api.js"
import { badRequest } from "./errors.js"
import { routeTemplates } from "./routeTemplate.js"

/** The parts of a request that are decoded with a schema. */
export type RequestPart = "body" | "path" | "query" | "headers"

const partNames: Record<RequestPart, string> = {
  body: "request body",
  path: "path parameters",
  query: "query parameters",
  headers: "headers",
}

/** The first thing wrong in a decoded value: where, and what was wanted there instead. */
interface Fault {
  readonly path: ReadonlyArray<PropertyKey>
  readonly problem:
    | { readonly _tag: "Wrong"; readonly expected: AST.AST; readonly actual: unknown }
    | { readonly _tag: "Missing" }
    | { readonly _tag: "Unknown"; readonly known: ReadonlyArray<PropertyKey> }
}

const isAbsence = (ast: AST.AST) => AST.isUndefinedKeyword(ast) || AST.isVoidKeyword(ast)

const literals = (ast: AST.AST): ReadonlyArray<AST.LiteralValue> | undefined => {
  if (AST.isLiteral(ast)) return [ast.literal]
  if (!AST.isUnion(ast)) return undefined
  const all: Array<AST.LiteralValue> = []
  for (const member of ast.types.filter((t) => !isAbsence(t))) {
    const some = literals(member)
    if (some === undefined) return undefined
    all.push(...some)
  }
  return all
}

const describe = (ast: AST.AST): string => {
  const values = literals(ast)
  if (values !== undefined) return values.length === 1 ? String(values[0]) : `one of ${values.map(String).join(", ")}`
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "a boolean"
    case "TupleType":
      return "an array"
    case "TypeLiteral":
      return "a JSON object"
    case "Union":
      return ast.types.filter((t) => !isAbsence(t)).map(describe).join(" or ")
    case "Refinement":
      return Option.getOrElse(AST.getDescriptionAnnotation(ast), () => describe(ast.from))
    case "Transformation":
      return describe(ast.from)
    case "Suspend":
      return describe(ast.f())
    default:
      return Option.getOrElse(AST.getDescriptionAnnotation(ast), () => String(ast))
  }
}

const first = <A>(issues: ParseResult.SingleOrNonEmpty<A>): A => (Array.isArray(issues) ? issues[0] : (issues as A))

/**
 * A union's members absent or null are left out of what is asked for, so a nullable number that got
 * a string says "must be a number"; a member that alone could have taken the value is followed to
 * the check it failed.
 */
const unionFault = (issue: ParseResult.Composite, path: ReadonlyArray<PropertyKey>): Fault => {
  const union = issue.ast as AST.Union
  const members = union.types.filter((t) => !isAbsence(t) && !(AST.isLiteral(t) && t.literal === null))
  const wanted = issue.actual !== null && members.length === 1 && literals(union) === undefined ? members[0] : undefined
  const followed = wanted === undefined ? undefined : (Array.isArray(issue.issues) ? issue.issues : [issue.issues]).find((i) => "ast" in i && i.ast === wanted)
  return followed === undefined ? { path, problem: { _tag: "Wrong", expected: union, actual: issue.actual } } : faultOf(followed, path)
}

const faultOf = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, parent?: AST.AST): Fault => {
  switch (issue._tag) {
    case "Pointer":
      return faultOf(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])], parent)
    case "Composite":
      return AST.isUnion(issue.ast) ? unionFault(issue, path) : faultOf(first(issue.issues), path, issue.ast)
    case "Refinement":
      return issue.kind === "From" ? faultOf(issue.issue, path) : { path, problem: { _tag: "Wrong", expected: issue.ast, actual: issue.actual } }
    case "Transformation":
      return faultOf(issue.issue, path)
    case "Missing":
      return { path, problem: { _tag: "Missing" } }
    case "Unexpected":
      return {
        path,
        problem: { _tag: "Unknown", known: parent !== undefined && AST.isTypeLiteral(parent) ? parent.propertySignatures.map((p) => p.name) : [] },
      }
    case "Type":
    case "Forbidden":
      return { path, problem: { _tag: "Wrong", expected: issue.ast, actual: issue.actual } }
  }
}

const fieldName = (path: ReadonlyArray<PropertyKey>) =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

const shown = (value: unknown) => {
  const text = value === undefined ? "nothing" : JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 59)}…` : text
}

const saying = (part: RequestPart, fault: Fault): string => {
  const subject = fault.path.length === 0 ? "it" : `'${fieldName(fault.path)}'`
  const problem = fault.problem
  switch (problem._tag) {
    case "Missing":
      return `${subject} is required`
    case "Unknown":
      return `unknown field ${subject}${problem.known.length === 0 ? "" : ` (it takes ${problem.known.map(String).join(", ")})`}`
    case "Wrong":
      // The platform reads a repeated query parameter as a list of its values.
      if (part === "query" && Array.isArray(problem.actual) && literals(problem.expected) === undefined && !describe(problem.expected).includes("array"))
        return `${subject} may be given only once`
      return `${subject} must be ${describe(problem.expected)}, got ${shown(problem.actual)}`
  }
}

const routeOf = routeTemplates(SluiceApi, [])

/** `/admin/v1/accounts/:id` as the API's documentation writes it: `/admin/v1/accounts/{id}`. */
export const documentedRoute = (method: string, url: string) => {
  const path = new URL(url, "http://sluice").pathname
  const route = routeOf(method === "HEAD" ? "GET" : method, path)
  return (route === "unmatched" ? path : route).replace(/:([A-Za-z0-9_]+)/g, "{$1}")
}

/**
 * Every request that fails to decode is answered by this one line, naming the request and the first
 * field at fault: `Invalid request body for PATCH /admin/v1/accounts/{id}: 'concurrency' must be a
 * number, got "lots"`.
 */
export const invalidRequest = (part: RequestPart, request: { readonly method: string; readonly url: string }, error: ParseResult.ParseError) => {
  const fault = faultOf(error.issue, [])
  return badRequest(
    `Invalid ${partNames[part]} for ${request.method} ${documentedRoute(request.method, request.url)}: ${saying(part, fault)}`,
    fault.path.length === 0 ? null : fieldName(fault.path),
  )
}
