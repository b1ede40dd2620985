import type { Database } from '../db/database.ts';
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/errors.ts';
import type { Handlers } from '../http/contract.ts';
import { AppError } from '../shared/errors.ts';

export const healthHandlers = (database: Database): Pick<Handlers, 'getHealth' | 'getReady'> => ({
  getHealth: async () => ({ status: 200, body: { status: 'ok' } }),
  getReady: async () => {
    try {
      await database.ping();
    } catch (err) {
      throw new AppError('ERR_UNAVAILABLE', 'The database does not answer', { headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) }, cause: err });
    }
    return { status: 200, body: { status: 'ok', checks: { database: 'ok' } } };
  },
});
