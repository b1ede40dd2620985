// Row types of the database, kept by hand beside the migrations (src/db/migrations). A column added
// there is added here in the same commit; the isolation and repository tests read every column.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = ColumnType<Record<string, unknown>, string | Record<string, unknown> | undefined, string | Record<string, unknown>>;

export interface TenantsTable {
  id: string;
  name: string;
  timezone: Generated<string>;
  settings: Json;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  email_verified_at: Date | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface MembershipsTable {
  tenant_id: string;
  user_id: string;
  role: 'owner' | 'admin' | 'agent';
  seat: Generated<'full' | 'lite'>;
  status: Generated<'active' | 'invited'>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface RefreshTokensTable {
  id: string;
  family_id: string;
  user_id: string;
  tenant_id: string;
  token_hash: Uint8Array;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
  created_at: CreatedAt;
}

export interface DB {
  tenants: TenantsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  refresh_tokens: RefreshTokensTable;
  departments: DepartmentsTable;
  department_members: DepartmentMembersTable;
  api_keys: ApiKeysTable;
  mail_tokens: MailTokensTable;
}

export type Tenant = Selectable<TenantsTable>;
export type NewTenant = Insertable<TenantsTable>;
export type TenantUpdate = Updateable<TenantsTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Membership = Selectable<MembershipsTable>;
export type NewMembership = Insertable<MembershipsTable>;
export type NewRefreshToken = Insertable<RefreshTokensTable>;

export interface DepartmentsTable {
  id: string;
  tenant_id: string;
  name: string;
  description: Generated<string>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface DepartmentMembersTable {
  tenant_id: string;
  department_id: string;
  user_id: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  name: string;
  scopes: string[];
  prefix: string;
  key_hash: Uint8Array;
  created_by: string | null;
  created_at: CreatedAt;
  rotated_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export type MailTokenPurpose = 'verify_email' | 'reset_password' | 'invitation';

export interface MailTokensTable {
  id: string;
  purpose: MailTokenPurpose;
  user_id: string;
  tenant_id: string | null;
  token_hash: Uint8Array;
  expires_at: Date;
  used_at: Date | null;
  created_at: CreatedAt;
}

export type Department = Selectable<DepartmentsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
