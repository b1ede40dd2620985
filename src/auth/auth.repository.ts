import { sql } from 'kysely';
import type { Tx } from '../db/database.ts';
import type { NewRefreshToken, NewUser } from '../db/schema.ts';

export async function insertUser(trx: Tx, user: NewUser) {
  return trx.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
}

export async function findUserByEmail(trx: Tx, email: string) {
  return trx
    .selectFrom('users')
    .selectAll()
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function insertRefreshToken(trx: Tx, token: NewRefreshToken) {
  await trx.insertInto('refresh_tokens').values(token).execute();
}
