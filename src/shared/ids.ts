import { v7 as uuidv7 } from 'uuid';

// Public identifiers are a type prefix and a UUIDv7 (time-ordered, so primary-key indexes stay append-mostly).
export const ID_PREFIXES = {
  tenant: 'tn',
  user: 'usr',
  conversation: 'conv',
  visitor: 'vis',
  message: 'msg',
  contact: 'ct',
  widget: 'wgt',
  domain: 'dom',
  cannedResponse: 'cr',
  file: 'file',
  apiKey: 'key',
  event: 'evt',
  survey: 'srv',
  session: 'ses',
  webhook: 'whk',
  webhookDelivery: 'whd',
  bot: 'bot',
  botDelivery: 'btd',
  workflow: 'wf',
  workflowRun: 'wfr',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A tenant's id as newId makes it: `tn_` and a UUIDv7. */
export const TENANT_ID = /^tn_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${uuidv7()}`;
}

export function newUuid(): string {
  return uuidv7();
}
