# Production image: Node 26 runs the TypeScript sources directly (type stripping), so there is no build step.
# Node 26 comes from the base image: in development it is the `node` devDependency, which
# `npm ci --omit=dev` leaves out. Runs as the image's unprivileged `node` user.
FROM node:26-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Runtime dependencies only; no dependency of ours needs an install script at run time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# The dependency bundles (src/dependency-bundles.js: kysely and others as one module each, a faster start) are built with
# rolldown, a dev tool: in a stage of their own, which only they leave.
FROM node:26-bookworm-slim AS bundles
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src/dependency-bundles.js ./src/dependency-bundles.js
COPY scripts/bundle-dependencies.ts ./scripts/bundle-dependencies.ts
RUN node scripts/bundle-dependencies.ts

FROM node:26-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=bundles /app/node_modules/.cache/customer-chat/bundles ./node_modules/.cache/customer-chat/bundles
COPY package.json ./
COPY openapi ./openapi
COPY generated ./generated
COPY src ./src
# The chat bubble's built script, served at /widget.js (built and committed: no build step here either).
COPY widget/dist ./widget/dist
# The team app, served at /app (built and committed too: npm run app:check keeps it in step with app/src).
COPY app/dist ./app/dist
# The embedded database's template (a first start copies it instead of running initdb and the
# migrations); the install above ran no scripts, so it is built here. It never fails the build.
COPY scripts/pglite-template.ts ./scripts/pglite-template.ts
RUN node scripts/pglite-template.ts
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3000/api/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The preload starts tracing only when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md, Tracing).
CMD ["node", "src/main.js"]
