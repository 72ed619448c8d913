# syntax=docker/dockerfile:1
#
# Copilot Gateway: a production image.
#
#   docker build -t copilot-gateway .
#   docker run --rm -p 4000:4000 copilot-gateway                       # demo mode
#   docker run --rm -p 4000:4000 -e OPENAI_API_KEY=sk-... copilot-gateway
#
# Two stages: `build` installs every dependency (TypeScript, esbuild, …) and runs `npm run build`; the
# runtime stage installs only the production dependencies and copies what `npm start` needs at run time
# (dist/, schema/, scripts/, package.json, package-lock.json). See DEPLOYMENT.md, "Deploying: container,
# compose and a proxy".

# Node 24, the current LTS (package.json "engines" says which Node 20 and 22 releases also work).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first, so that a change to the sources does not reinstall them (the package has no install
# script of its own; scripts/ comes with the sources for the build).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY schema/ schema/
COPY generated/ generated/
COPY scripts/ scripts/
COPY src/ src/
COPY explorer/ explorer/
# tsc to dist/, the SDL to dist/schema/, the offline explorer to dist/explorer/, then dist/.built.
RUN npm run build

# ---------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app

# NODE_FLAGS: the flags `npm start` uses (package.json config.nodeFlags; checked below). Set it to
# replace them, or to empty for Node's defaults, exactly as with `npm start`.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    NODE_FLAGS="--max-semi-space-size=4 --max-old-space-size=1536"

# Production dependencies only. --ignore-scripts: no production dependency needs its install script
# (protobufjs' postinstall only prints version-scheme warnings; @google/genai's preinstall is an echo),
# and the package itself has none.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && node -e 'const flags = require("./package.json").config.nodeFlags; if (flags !== process.env.NODE_FLAGS) { console.error("NODE_FLAGS in the Dockerfile differs from package.json config.nodeFlags (" + flags + "): update the Dockerfile."); process.exit(1); }'

COPY scripts/ scripts/
COPY schema/ schema/
COPY --from=build /app/dist/ dist/
# scripts/start.mjs builds only in a source checkout (one with tsconfig.build.json): this stage has none,
# so it runs dist/ as copied, whatever the files' times.

# Files stay owned by root (the gateway writes nothing to disk); the process runs as the image's
# unprivileged `node` user.
USER node

EXPOSE 4000

# Liveness: GET /health on this container's own port (slim images have no curl; Node has fetch).
# Compose points its own check at /ready (see compose.yaml). With HOST set to one address other than
# 0.0.0.0 or 127.0.0.1, override this check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/health', { signal: AbortSignal.timeout(2500) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# `exec` makes node PID 1 (no npm or shell in between), so `docker stop`'s SIGTERM reaches the gateway
# itself. Node as PID 1 gets no default signal handlers from the kernel, but the gateway installs its
# own for SIGTERM and SIGINT: it stops taking work, closes its streams and store, and exits 0. It starts
# no child processes, so nothing needs reaping; `docker run --init` (or compose's `init: true`) adds
# tini in front anyway if you prefer.
CMD ["/bin/sh", "-c", "exec node $NODE_FLAGS scripts/start.mjs"]
