import { Context } from "effect"
import type { Catalog } from "./Catalog.js"

/** The models this service serves, as configured (SLUICE_MODELS, or the built-in simulator's). */
export class ModelCatalog extends Context.Tag("Config/ModelCatalog")<ModelCatalog, Catalog>() {}
