#!/usr/bin/env node
// Writes openapi.json at the repo root from the built app (`npm run openapi`), or with --check
// fails when the committed file differs from what the app produces (CI's drift check).
require('reflect-metadata');
const { writeFileSync, readFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');

async function main() {
  process.env.LOG_LEVEL = 'silent';
  process.env.WORKERS = 'off';
  const { NestFactory } = require('@nestjs/core');
  const { AppModule } = require('../dist/src/app.module');
  const { buildOpenApiDocument } = require('../dist/src/app.setup');
  // The document is built from metadata only: no database, Redis or listening socket is needed.
  const app = await NestFactory.create(AppModule, { logger: false, preview: true, abortOnError: false });
  const document = JSON.stringify(buildOpenApiDocument(app), null, 2) + '\n';
  const target = join(__dirname, '..', 'openapi.json');
  if (process.argv.includes('--check')) {
    const committed = existsSync(target) ? readFileSync(target, 'utf8') : '';
    if (committed !== document) {
      console.error('openapi.json is out of date: run `npm run openapi` and commit the result.');
      process.exit(1);
    }
    console.log('openapi.json is up to date');
  } else {
    writeFileSync(target, document);
    console.log(`wrote ${target}`);
  }
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
