/**
 * One Jest run covers unit specs (src/**\/*.spec.ts) and e2e specs (test/**\/*.e2e-spec.ts).
 * NestJS 12 and a few other dependencies ship as native ES modules. Node 24 loads them from
 * CommonJS through require(esm), but Jest's own module loader cannot, so SWC compiles those
 * packages to CommonJS on the fly (cached after the first run).
 */
const esmPackages = [
  '@nestjs',
  'file-type',
  'strtok3',
  'token-types',
  'peek-readable',
  '@tokenizer',
  'uint8array-extras',
  'oauth4webapi',
  'nodemailer',
  'smtp-server',
  'load-esm',
];

const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs', ignoreDynamic: false },
    sourceMaps: 'inline',
  },
];

module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  // A worker whose heap passed 1 GB after a file is replaced by a fresh one. Without it the two
  // workers grew to 1.5 GB and more over the suite (each e2e file boots Nest apps in its own module
  // registry), and at the end of every full run one took longer to exit than Jest waits (500 ms):
  // "A worker process has failed to exit gracefully and has been force exited". Both workers had
  // emptied their event loops (no handle left open after any file, checked file by file), so it was
  // the exit of a large heap, not a leak; with the limit, no force exit, and no slower a run.
  workerIdleMemoryLimit: '1GB',
};
