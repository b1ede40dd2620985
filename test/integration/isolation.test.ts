import { expect } from 'chai';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { newId } from '../../src/shared/ids.ts';
import * as tenantRepo from '../../src/tenants/tenant.repository.ts';
import * as authRepo from '../../src/auth/auth.repository.ts';
import { openExtraDatabase } from '../support/harness.ts';

// Row-level security is the second wall: a query that forgets its tenant filter still sees only its
// own tenant. Proved on both engines in every run: PGlite, and PostgreSQL when DATABASE_URL is set.
const engines: [string, string | undefined][] = [['PGlite', 'pglite://memory']];
if (process.env.DATABASE_URL) engines.push(['PostgreSQL', process.env.DATABASE_URL]);

for (const [engine, url] of engines) {
  describe(`tenant isolation on ${engine}`, () => {
    let database: Database;
    const tenantA = newId('tenant');
    const tenantB = newId('tenant');
    const userA = newId('user');
    const userB = newId('user');

    before(async () => {
      database = await openExtraDatabase(url);
      await database.asSystem(async (trx) => {
        for (const [tenant, user] of [[tenantA, userA], [tenantB, userB]] as const) {
          await tenantRepo.insertTenant(trx, { id: tenant, name: `T ${tenant}` });
          await authRepo.insertUser(trx, { id: user, email: `${user}@example.test`, name: 'U', password_hash: 'secret-hash' });
          await tenantRepo.insertMembership(trx, { tenant_id: tenant, user_id: user, role: 'owner' });
        }
      });
    });

    it('the request role is not a superuser, not the tables\' owner and cannot bypass RLS', async () => {
      const row = await database.withTenant(tenantA, async (trx) =>
        (
          await sql<{ role: string; rolsuper: boolean; rolbypassrls: boolean; owns: boolean }>`
            select current_user as role, r.rolsuper, r.rolbypassrls,
                   exists (select 1 from pg_tables t where t.tableowner = current_user and t.schemaname = 'public') as owns
            from pg_roles r where r.rolname = current_user`.execute(trx)
        ).rows[0],
      );
      expect(row).to.deep.equal({ role: 'chat_app', rolsuper: false, rolbypassrls: false, owns: false });
    });

    it('queries with no tenant filter see only the current tenant', async () => {
      const seen = await database.withTenant(tenantA, async (trx) => ({
        tenants: (await trx.selectFrom('tenants').select('id').execute()).map((r) => r.id),
        memberships: (await trx.selectFrom('memberships').select('tenant_id').execute()).map((r) => r.tenant_id),
        users: (await trx.selectFrom('users').select('id').execute()).map((r) => r.id),
      }));
      expect(seen).to.deep.equal({ tenants: [tenantA], memberships: [tenantA], users: [userA] });
    });

    it('a tenant-less transaction of the request role sees nothing at all', async () => {
      const count = await database.withTenant('', async (trx) =>
        (await trx.selectFrom('memberships').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n,
      );
      expect(count).to.equal(0);
    });

    it('writing a row for another tenant is refused by the database', async () => {
      let error: unknown;
      await database
        .withTenant(tenantA, (trx) => tenantRepo.insertMembership(trx, { tenant_id: tenantB, user_id: userA, role: 'agent' }))
        .catch((e) => (error = e));
      expect((error as { code?: string })?.code).to.equal('42501'); // insufficient_privilege: row-level security
    });

    it('updates and deletes without a filter touch only the current tenant', async () => {
      await database.withTenant(tenantA, (trx) => trx.updateTable('tenants').set({ timezone: 'Asia/Tokyo' }).execute());
      const b = await database.withTenant(tenantB, (trx) => tenantRepo.findTenant(trx, tenantB));
      expect(b?.timezone).to.equal('UTC');
      const deleted = await database.withTenant(tenantA, (trx) => trx.deleteFrom('refresh_tokens').execute()).catch((e) => e);
      expect((deleted as { code?: string }).code).to.equal('42501'); // the request role has no grant on tokens at all
    });

    it('the request role cannot read password hashes, even of its own members', async () => {
      let error: unknown;
      await database.withTenant(tenantA, (trx) => trx.selectFrom('users').select('password_hash').execute()).catch((e) => (error = e));
      expect((error as { code?: string })?.code).to.equal('42501');
    });

    it('the tenant setting does not outlive its transaction on a pooled connection', async () => {
      await database.withTenant(tenantA, async () => undefined);
      const leftover = await sql<{ t: string | null; role: string }>`select current_setting('app.tenant_id', true) as t, current_user as role`.execute(
        database.db,
      );
      expect(leftover.rows[0]?.t ?? '').to.equal('');
      expect(leftover.rows[0]?.role).not.to.equal('chat_app');
    });
  });
}
