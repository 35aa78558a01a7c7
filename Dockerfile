# Guidon's image: docs/deploy.md (building, running, probes, secrets).
#
# NODE_IMAGE is the base of both stages: a Debian-based Node image with npm and Node's headers
# under /usr/local, such as the official one (the default, a maintained line, slim) or one made
# locally by scripts/container/base.mjs, which the test suite builds this file on.
ARG NODE_IMAGE=node:22-bookworm-slim

# What compiles: better-sqlite3 (from source, against the image's own Node headers), the
# TypeScript, the dashboard, and the client packages' tarballs that the server serves at /downloads/.
FROM ${NODE_IMAGE} AS toolchain
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages/engine/package.json packages/engine/
COPY packages/sdk/package.json packages/sdk/
COPY packages/openfeature/package.json packages/openfeature/
COPY packages/server/package.json packages/server/
COPY packages/cli/package.json packages/cli/
COPY packages/web/package.json packages/web/

# The server's production dependencies alone: better-sqlite3 is compiled here, once.
FROM toolchain AS runtime-deps
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --workspace=packages/server \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src build/Release/obj build/Release/obj.target build/Release/test_extension.node build/Release/sqlite3.a build/deps

# Everything, to build (no native addon is loaded while building, so no install scripts).
FROM toolchain AS build
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --ignore-scripts
COPY . .
RUN npm run build

# The image: Node, the production dependencies and the built files; no compiler, no dev dependency.
FROM ${NODE_IMAGE}
RUN groupadd --system --gid 10001 guidon \
 && useradd --system --uid 10001 --gid guidon --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin guidon \
 && mkdir /data && chown guidon:guidon /data && chmod 0700 /data
WORKDIR /app
COPY --from=runtime-deps /src/node_modules node_modules
COPY --from=build /src/LICENSE ./
COPY --from=build /src/packages/engine/package.json packages/engine/
COPY --from=build /src/packages/engine/dist/src packages/engine/dist/src
COPY --from=build /src/packages/server/package.json packages/server/
COPY --from=build /src/packages/server/dist/src packages/server/dist/src
COPY --from=build /src/packages/server/dist/downloads packages/server/dist/downloads
COPY --from=build /src/packages/web/dist packages/web/dist
# DATABASE_URL unset: SQLite at ./data/guidon.db, taken from the working directory: /data/guidon.db.
WORKDIR /
VOLUME /data
ENV PORT=8080
EXPOSE 8080
USER 10001:10001
STOPSIGNAL SIGTERM
# Liveness (the process serves); orchestrators that route traffic should also probe /ready.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=32", "--min-semi-space-size=32", "/app/packages/server/dist/src/main.js"]
