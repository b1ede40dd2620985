// Compiled by `npm run typecheck`, never run: what a client typed from generated/api.ts may and may
// not write. Each @ts-expect-error fails the typecheck if the line it marks ever compiles.
import type { components, Credentials, operations } from '../../generated/api.ts';

type S = components['schemas'];
type Body<K extends keyof operations> = operations[K] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

// Request fields with a default are optional: the service fills them in.
export const message: Body<'sendMessage'> = { conversation_id: 'conv_0193', content: 'Hello' };
export const widget: S['WidgetCreate'] = { name: 'Site' };
// @ts-expect-error content is required
export const noContent: S['MessageCreate'] = { conversation_id: 'conv_0193' };

// Response fields that are always there are required.
export const readConversation = (c: S['Conversation']): string => c.status;

// Credentials: a bearer token (with an optional X-Tenant-ID), or an API key with its tenant.
export const asUser: Credentials<'listConversations'> = { Authorization: 'Bearer eyJ...' };
export const asUserOfTenant: Credentials<'listConversations'> = { Authorization: 'Bearer eyJ...', 'X-Tenant-ID': 'tn_0193' };
export const asKey: Credentials<'listConversations'> = { 'X-API-Key': 'chat_abc', 'X-Tenant-ID': 'tn_0193' };
// @ts-expect-error an API key goes with X-Tenant-ID
export const keyWithoutTenant: Credentials<'listConversations'> = { 'X-API-Key': 'chat_abc' };
// @ts-expect-error creating an API key needs a user, not a key
export const keyForKeys: Credentials<'createApiKey'> = { 'X-API-Key': 'chat_abc', 'X-Tenant-ID': 'tn_0193' };
// @ts-expect-error the scheme is Bearer
export const notBearer: Credentials<'getConversation'> = { Authorization: 'Token abc' };
export const publicHealth: Credentials<'getHealth'> = {};
