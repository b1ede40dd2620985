// The benchmark's ideal baseline: plain node:http and pg (or PGlite), running in one transaction the statements the
// app's work transaction sent for each endpoint (captured by conversations.ts: BEGIN with the tenant's
// set_config, as the app sends them on PostgreSQL, then the work; for a list page, the page query alone,
// without a total), with the same JWT check. What the app costs beyond this is express, the validator,
// Kysely, the total and our own code.
import { createSecretKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import jwt from 'jsonwebtoken';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { newId } from '../../src/shared/ids.ts';

interface Statement {
  sql: string;
  params: unknown[];
}
interface Captured {
  conversationId: string;
  list: Statement[];
  listOpen: Statement[];
  get: Statement[];
  post: Statement[];
}

const captured = JSON.parse(readFileSync(process.env.BASELINE_CAPTURE!, 'utf8')) as Captured;
// A key object, as the app's TokenService keeps: a string is tried as a PEM key at every verify.
const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET!, 'utf8'));
// BASELINE_PGLITE_DIR: the embedded database instead, in this process as the app has it (a copy of the
// app's data directory); its transactions run one at a time, as the app's do.
const pgliteDir = process.env.BASELINE_PGLITE_DIR;
const pglite = pgliteDir ? await PGlite.create({ dataDir: pgliteDir }) : undefined;
const pool = pglite ? undefined : new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_MAX ?? 10) });

async function replay(statements: Statement[], rewrite: (p: unknown) => unknown): Promise<unknown[]> {
  if (pglite) return replayOnPGlite(pglite, statements, rewrite);
  return replayOnPostgres(pool!, statements, rewrite);
}

function replayOnPGlite(db: PGlite, statements: Statement[], rewrite: (p: unknown) => unknown): Promise<unknown[]> {
  return db.transaction(async (tx) => {
    let last: unknown[] = [];
    for (const s of statements) last = (await tx.query(s.sql, s.params.map(rewrite))).rows;
    return last;
  });
}

async function replayOnPostgres(pool: pg.Pool, statements: Statement[], rewrite: (p: unknown) => unknown): Promise<unknown[]> {
  let last: unknown[] = [];
  const client = await pool.connect();
  try {
    // The app's first statement begins the transaction itself when it carries BEGIN (its PostgreSQL path).
    if (!statements[0]?.sql.startsWith('begin;')) await client.query('begin');
    for (const s of statements) {
      const values = s.params.map(rewrite);
      last = (await client.query(named ? { name: nameOf(s.sql), text: s.sql, values } : { text: s.sql, values })).rows;
    }
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  return last;
}

// BASELINE_NAMED: each statement prepared once per connection and sent by name (not BEGIN's: a simple query).
const named = process.env.BASELINE_NAMED === 'true';
const names = new Map<string, string>();
const nameOf = (sql: string) => {
  let name = names.get(sql);
  if (!name) names.set(sql, (name = `ideal_${names.size + 1}`));
  return sql.startsWith('begin;') ? undefined : name;
};

const reviveDate = (p: unknown) => (typeof p === 'string' && /^\d{4}-\d\d-\d\dT/.test(p) ? new Date() : p);

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      try {
        jwt.verify((req.headers.authorization ?? '').slice(7), secret, { algorithms: ['HS256'] });
        let rows: unknown[];
        if (req.method === 'GET' && req.url?.startsWith('/api/v1/conversations?')) {
          rows = await replay(req.url.includes('status=') ? captured.listOpen : captured.list, (p) => p);
        } else if (req.method === 'GET' && req.url?.startsWith('/api/v1/conversations/')) {
          rows = await replay(captured.get, (p) => p);
        } else if (req.method === 'POST' && req.url === '/api/v1/messages') {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { conversation_id: string };
          rows = await replay(captured.post, (p) => {
            if (p === captured.conversationId) return body.conversation_id;
            if (typeof p === 'string' && /^(msg|evt)_/.test(p)) return newId(p.startsWith('msg') ? 'message' : 'event');
            return reviveDate(p);
          });
        } else {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(req.method === 'POST' ? 201 : 200, { 'Content-Type': 'application/json' }).end(JSON.stringify(rows));
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    })();
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
