/** Whose batch it is and which models its rows use, for the writer's logs and metrics. */
export interface BatchOwner {
  readonly accountId: string
  readonly models: ReadonlyArray<string>
}
