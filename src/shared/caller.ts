import type { Principal } from './principal.ts';

/** The id that stands for the caller in read marks, idempotency keys and message senders (a bot's key: the bot). */
export const callerIdOf = (principal: Principal): string =>
  principal.kind === 'user' ? principal.userId : principal.kind === 'api_key' ? (principal.botId ?? principal.keyId) : principal.visitorId;
