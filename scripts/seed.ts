// `npm run seed`: a demo tenant (an owner, two agents, one lite member, a department) on the configured
// database, and how to log in. Running it again prints the same tenant instead of making another.
import { PasswordHasher } from '../src/auth/password.ts';
import * as authRepo from '../src/auth/auth.repository.ts';
import { loadConfig } from '../src/config.ts';
import { DataDirLockedError } from '../src/db/data-dir-lock.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import * as departmentRepo from '../src/departments/department.repository.ts';
import { newId, newUuid } from '../src/shared/ids.ts';
import * as tenantRepo from '../src/tenants/tenant.repository.ts';

const PASSWORD = 'demo-password-123';
const people = [
  { email: 'owner@demo.test', name: 'Olivia Owner', role: 'owner', seat: 'full' },
  { email: 'agent1@demo.test', name: 'Adam Agent', role: 'agent', seat: 'full' },
  { email: 'agent2@demo.test', name: 'Alice Agent', role: 'agent', seat: 'full' },
  { email: 'lite@demo.test', name: 'Luke Lite', role: 'agent', seat: 'lite' },
] as const;

const config = loadConfig();
// The embedded database is one process's: with the service running on it, the seed stops here rather
// than write beside it (that corrupted it). Seed first, then start the service.
const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 }).catch((err: unknown) => {
  if (!(err instanceof DataDirLockedError)) throw err;
  console.error(`${err.message}\n\nnpm run seed cannot run beside the service on the embedded database: stop the service (process ${err.pid}), run the seed, then start the service again.`);
  process.exit(75);
});
const passwords = new PasswordHasher(config.bcryptCost);
try {
  await migrateToLatest(database.db);
  const existing = await database.asSystem((trx) => authRepo.findUserByEmail(trx, people[0].email));
  let tenantId: string;
  if (existing) {
    tenantId = (await database.asSystem((trx) => authRepo.findFirstActiveTenantOfUser(trx, existing.id)))!;
    console.log('The demo tenant exists already.');
  } else {
    const hash = await passwords.hash(PASSWORD);
    tenantId = newId('tenant');
    await database.asSystem(async (trx) => {
      await tenantRepo.insertTenant(trx, { id: tenantId, name: 'Demo Company', timezone: 'Europe/London' });
      const userIds: string[] = [];
      for (const p of people) {
        const user = await authRepo.insertUser(trx, { id: newId('user'), email: p.email, name: p.name, password_hash: hash, email_verified_at: new Date() });
        await tenantRepo.insertMembership(trx, { tenant_id: tenantId, user_id: user.id, role: p.role, seat: p.seat });
        userIds.push(user.id);
      }
      const department = await departmentRepo.insertDepartment(trx, { id: newUuid(), tenant_id: tenantId, name: 'Support', description: 'First line' });
      await departmentRepo.addDepartmentMembers(trx, tenantId, department.id, userIds.slice(1, 3));
    });
    console.log('Made the demo tenant.');
  }
  console.log(`
Tenant: Demo Company (${tenantId})
Members (password for all: ${PASSWORD}):
${people.map((p) => `  ${p.email.padEnd(18)} ${p.role}, ${p.seat} seat`).join('\n')}
Department: Support (agent1, agent2)

Log in:
  curl -s -X POST http://localhost:${config.port}/api/v1/auth/login \\
    -H 'Content-Type: application/json' \\
    -d '{"email":"owner@demo.test","password":"${PASSWORD}"}'
`);
} finally {
  await passwords.close();
  await database.close();
}
