#!/usr/bin/env node
/**
 * Completes package-lock.json with the platform-specific optional packages (other operating
 * systems and CPUs) that the package registry reachable here does not serve. Without their lock
 * entries `npm ci` refuses the lock as out of sync; with them, npm skips them by os/cpu as usual.
 * Run after every `npm install` that changes the lock: `node scripts/complete-lockfile.js`.
 */
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const path = join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(path, 'utf8'));
const OS = ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];
const CPU = ['arm64', 'x64', 'ia32', 'ppc64', 's390x', 'loong64', 'riscv64', 'arm'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = OS.find((o) => parts.includes(o));
  const cpu = CPU.find((c) => parts.includes(c));
  if (!os || !cpu) return null;
  const libc = parts.includes('musl') || parts.includes('musleabihf') ? 'musl' : parts.includes('gnu') || parts.includes('gnueabihf') ? 'glibc' : undefined;
  return { os: [os], cpu: [cpu], ...(os === 'linux' && libc ? { libc: [libc] } : {}) };
}

let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = key ? `${key}/node_modules/${dep}` : `node_modules/${dep}`;
    if (lock.packages[base] || lock.packages[`node_modules/${dep}`]) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    lock.packages[`node_modules/${dep}`] = { version, ...(entry.dev ? { dev: true } : {}), optional: true, ...platform };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform-specific optional entries`);
