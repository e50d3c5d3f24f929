# Checked by reading only: no Docker engine runs where this was written.
FROM node:20-bookworm-slim AS deps
# better-sqlite3 compiles itself when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY bin ./bin
COPY src ./src
COPY console ./console
# `prepare` bundles the server, the CLI and `npm run replay` into dist/.
RUN npm ci --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
# MALLOC_MMAP_THRESHOLD_: see src/config/serverEnv.ts.
ENV SLUICE_HOST=0.0.0.0 SLUICE_DATA_DIR=/data MALLOC_MMAP_THRESHOLD_=1048576
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/dist ./dist
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY examples ./examples
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# node itself, not npm, is PID 1, so SIGTERM reaches Sluice's graceful shutdown.
CMD ["node", "dist/server.mjs"]
