// `npm run stack:check` (part of `npm run check`): docker-compose.yml keeps the shape `npm run stack`
// starts — the same services, the same ports between them, the same app environment names, and balancer
// and pooler configurations generated from the same functions (scripts/stack/topology.ts).
//   --root <dir>  check a copy of the project (the tests break one on purpose)
//   --update      rewrite docker/haproxy/haproxy.cfg and docker/pgbouncer/pgbouncer.ini
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { APP_ENV, appServices, COMPOSE_ONLY_ENV, COMPOSE_ONLY_SERVICES, haproxyConfig, NAMED_STATEMENTS, PIECES, pgbouncerIni } from './topology.ts';

/** The balancer and pooler configurations compose mounts, as the topology generates them. */
export function composeConfigs(): Record<string, string> {
  return {
    'docker/haproxy/haproxy.cfg': haproxyConfig({
      bind: `:${PIECES.balancer.port}`,
      log: 'stdout',
      backends: appServices().map((name) => ({ name, host: name, port: PIECES.app.port })),
    }),
    'docker/pgbouncer/pgbouncer.ini': pgbouncerIni({
      listen: '0.0.0.0',
      port: PIECES.pooler.port,
      target: { host: PIECES.primary.compose, port: PIECES.primary.port },
      dir: '/run/pgbouncer',
      files: false,
      authType: 'scram-sha-256',
      maxPreparedStatements: 0,
    }),
  };
}

const hostPort = (url: string | undefined) => {
  try {
    const u = new URL(String(url));
    return `${u.hostname}:${u.port}`;
  } catch {
    return String(url);
  }
};

/** What differs between the compose file (under root) and the stack; empty when they agree. */
export function compareWithCompose(root: string): string[] {
  const problems: string[] = [];
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services?: Record<string, any> };
  const services = compose.services ?? {};
  const expected = [PIECES.balancer.compose, ...appServices(), PIECES.pooler.compose, PIECES.primary.compose, PIECES.redis.compose];
  for (const name of expected) if (!services[name]) problems.push(`docker-compose.yml has no service ${name} (npm run stack has it)`);
  for (const name of Object.keys(services)) {
    if (!expected.includes(name) && !(name in COMPOSE_ONLY_SERVICES)) problems.push(`service ${name} is in docker-compose.yml but not in npm run stack (scripts/stack/topology.ts)`);
  }

  const published = (services[PIECES.balancer.compose]?.ports ?? []) as string[];
  if (!published.some((p) => String(p).split(':').at(-1) === String(PIECES.balancer.port))) {
    problems.push(`the balancer does not publish its port ${PIECES.balancer.port}`);
  }
  for (const name of Object.keys(services)) {
    if (name !== PIECES.balancer.compose && name.startsWith(`${PIECES.app.compose}-`) && services[name].ports) problems.push(`${name} publishes a port: clients reach the app through the balancer only`);
  }

  const wanted = [...APP_ENV, ...Object.keys(COMPOSE_ONLY_ENV)].sort();
  for (const name of appServices()) {
    const env = (services[name]?.environment ?? {}) as Record<string, unknown>;
    if (!services[name]) continue;
    const names = Object.keys(env).sort();
    const missing = wanted.filter((n) => !names.includes(n));
    const extra = names.filter((n) => !wanted.includes(n));
    if (missing.length) problems.push(`${name}'s environment lacks ${missing.join(', ')} (npm run stack sets them)`);
    if (extra.length) problems.push(`${name}'s environment has ${extra.join(', ')}, which npm run stack does not set (scripts/stack/topology.ts APP_ENV)`);
    if (String(env.PORT) !== String(PIECES.app.port)) problems.push(`${name}'s PORT is ${env.PORT}, the balancer sends to ${PIECES.app.port}`);
    if (hostPort(String(env.DATABASE_URL).replace(/\$\{[^}]*\}/g, 'x')) !== `${PIECES.pooler.compose}:${PIECES.pooler.port}`) {
      problems.push(`${name}'s DATABASE_URL does not go through ${PIECES.pooler.compose}:${PIECES.pooler.port}`);
    }
    if (hostPort(String(env.REDIS_URL)) !== `${PIECES.redis.compose}:${PIECES.redis.port}`) problems.push(`${name}'s REDIS_URL is not ${PIECES.redis.compose}:${PIECES.redis.port}`);
    if (String(env.DATABASE_NAMED_STATEMENTS) !== NAMED_STATEMENTS) problems.push(`${name}'s DATABASE_NAMED_STATEMENTS is not "${NAMED_STATEMENTS}" (PgBouncer 1.18 in transaction mode)`);
  }

  for (const [file, text] of Object.entries(composeConfigs())) {
    let actual: string | undefined;
    try {
      actual = readFileSync(join(root, file), 'utf8');
    } catch {
      // reported below
    }
    if (actual !== text) problems.push(`${file} is not what scripts/stack/topology.ts generates (npm run stack:check -- --update)`);
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { root: { type: 'string', default: new URL('../../', import.meta.url).pathname }, update: { type: 'boolean', default: false } } });
  const root = resolve(values.root);
  if (values.update) for (const [file, text] of Object.entries(composeConfigs())) writeFileSync(join(root, file), text);
  const problems = compareWithCompose(root);
  if (problems.length > 0) {
    for (const p of problems) console.error(`stack:check: ${p}`);
    process.exitCode = 1;
  } else {
    console.log('stack:check: docker-compose.yml has the shape of npm run stack');
  }
}
