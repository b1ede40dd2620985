import type { Handlers } from '../http/contract.ts';
import type { AuthService } from './auth.service.ts';

type AuthOps = 'register' | 'login' | 'refreshToken' | 'logout' | 'verifyEmail' | 'forgotPassword' | 'resetPassword' | 'acceptInvitation';

export const authHandlers = (auth: AuthService): Pick<Handlers, AuthOps> => ({
  register: async ({ body }) => ({ status: 201, body: await auth.register(body) }),
  login: async ({ body }) => ({ status: 200, body: await auth.login(body) }),
  refreshToken: async ({ body }) => ({ status: 200, body: await auth.refresh(body.refresh_token) }),
  logout: async ({ body }) => ({ status: 200, body: await auth.logout(body.refresh_token) }),
  verifyEmail: async ({ body }) => ({ status: 200, body: await auth.verifyEmail(body.token) }),
  forgotPassword: async ({ body }) => ({ status: 202, body: await auth.forgotPassword(body.email) }),
  resetPassword: async ({ body }) => ({ status: 200, body: await auth.resetPassword(body) }),
  acceptInvitation: async ({ body }) => ({ status: 200, body: await auth.acceptInvitation(body) }),
});
