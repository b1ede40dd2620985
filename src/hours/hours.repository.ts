import type { Tx } from '../db/database.ts';
import type { StoredHours } from '../db/schema.ts';

// Hours live on the tenant's row and on each department's; row-level security keeps both to the tenant.

export async function tenantHours(trx: Tx, tenantId: string): Promise<StoredHours | null> {
  const row = await trx.selectFrom('tenants').select('business_hours').where('id', '=', tenantId).executeTakeFirstOrThrow();
  return row.business_hours;
}

export async function setTenantHours(trx: Tx, tenantId: string, hours: StoredHours | null): Promise<void> {
  await trx
    .updateTable('tenants')
    .set({ business_hours: hours === null ? null : JSON.stringify(hours), updated_at: new Date() })
    .where('id', '=', tenantId)
    .execute();
}

/** The department's own hours (null: it uses the tenant's); undefined when there is no such department. */
export async function departmentHours(trx: Tx, departmentId: string): Promise<{ own: StoredHours | null } | undefined> {
  const row = await trx.selectFrom('departments').select('business_hours').where('id', '=', departmentId).executeTakeFirst();
  return row && { own: row.business_hours };
}

export async function setDepartmentHours(trx: Tx, departmentId: string, hours: StoredHours | null): Promise<boolean> {
  const result = await trx
    .updateTable('departments')
    .set({ business_hours: hours === null ? null : JSON.stringify(hours), updated_at: new Date() })
    .where('id', '=', departmentId)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
