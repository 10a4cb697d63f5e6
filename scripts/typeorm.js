#!/usr/bin/env node
// Runs the TypeORM CLI against the compiled DataSource: `npm run migration:generate -- src/migrations/Name`.
const { execFileSync } = require('node:child_process');
const [command, ...args] = process.argv.slice(2);
const run = (cmd, argv) => execFileSync(cmd, argv, { stdio: 'inherit' });
run('npx', ['nest', 'build']);
if (command === 'migration:generate') {
  const target = args.shift() ?? 'src/migrations/Migration';
  run('npx', ['typeorm', 'migration:generate', '-d', 'dist/ormconfig.js', '--pretty', ...args, target]);
} else {
  run('npx', ['typeorm', command, '-d', 'dist/ormconfig.js', ...args]);
}
