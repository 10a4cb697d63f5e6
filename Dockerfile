FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ormconfig.ts ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# Where the generated development secrets live (SECRETS_FILE in docker-compose.yml). A named volume
# mounted here starts as a copy of this directory, so it must exist and belong to `node` in the image;
# otherwise the volume is root-owned and the API cannot write its secrets file.
RUN mkdir -p /var/lib/control-plane && chown node:node /var/lib/control-plane
USER node
# 3000: the API (PORT); 3001: the worker's probes and metrics (WORKER_PORT).
EXPOSE 3000 3001
# The V8 flags of `npm start` (README, Two entry points): a capped young generation, and no
# allocation-site pretenuring. Not in NODE_OPTIONS: Node refuses the second flag there.
CMD ["node", "--max-semi-space-size=16", "--no-allocation-site-pretenuring", "dist/src/main.js"]
