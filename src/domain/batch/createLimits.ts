/** The largest request body the API reads (a create body is refused with 413 beyond it). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024

export interface CreateLimits {
  readonly maxRequests: number
  readonly maxCustomIdLength: number
  readonly maxMetadataPairs: number
  readonly maxMetadataKeyLength: number
  readonly maxMetadataValueLength: number
}

export const DefaultCreateLimits: CreateLimits = {
  maxRequests: 50_000,
  maxCustomIdLength: 512,
  maxMetadataPairs: 16,
  maxMetadataKeyLength: 64,
  maxMetadataValueLength: 512,
}

export const createLimits = (overrides?: Partial<CreateLimits>): CreateLimits => ({
  maxRequests: overrides?.maxRequests ?? DefaultCreateLimits.maxRequests,
  maxCustomIdLength: overrides?.maxCustomIdLength ?? DefaultCreateLimits.maxCustomIdLength,
  maxMetadataPairs: overrides?.maxMetadataPairs ?? DefaultCreateLimits.maxMetadataPairs,
  maxMetadataKeyLength: overrides?.maxMetadataKeyLength ?? DefaultCreateLimits.maxMetadataKeyLength,
  maxMetadataValueLength: overrides?.maxMetadataValueLength ?? DefaultCreateLimits.maxMetadataValueLength,
})
