import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvironmentVariables, validateEnvironment } from './environment';

/** `.env.example` as name → value (commented-out `# NAME=` lines: variables without a default). */
function readExample(): { set: Map<string, string>; commented: Set<string>; names: string[] } {
  const text = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');
  const set = new Map<string, string>();
  const commented = new Set<string>();
  const names: string[] = [];
  for (const line of text.split('\n')) {
    const active = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    const inactive = /^#\s*([A-Z][A-Z0-9_]*)=\s*$/.exec(line);
    if (active) {
      set.set(active[1], active[2].replace(/^"(.*)"$/, '$1'));
      names.push(active[1]);
    } else if (inactive) {
      commented.add(inactive[1]);
      names.push(inactive[1]);
    }
  }
  return { set, commented, names };
}

describe('.env.example', () => {
  const example = readExample();
  const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;

  it('lists exactly the variables the service reads, each once', () => {
    expect([...example.names].sort()).toEqual(Object.keys(defaults).sort());
  });

  it('gives each variable its default, and leaves commented out those that have none', () => {
    for (const [name, value] of example.set) expect({ name, value }).toEqual({ name, value: String(defaults[name]) });
    for (const name of example.commented)
      expect({ name, default: defaults[name] }).toEqual({ name, default: undefined });
  });

  it('is a valid configuration as written', () => {
    expect(() => validateEnvironment(Object.fromEntries(example.set))).not.toThrow();
  });
});
