import type { Handlers } from '../http/contract.ts';
import type { AuthService } from './auth.service.ts';

export const authHandlers = (auth: AuthService): Pick<Handlers, 'register' | 'login'> => ({
  register: async ({ body }) => ({ status: 201, body: await auth.register(body) }),
  login: async ({ body }) => ({ status: 200, body: await auth.login(body) }),
});
