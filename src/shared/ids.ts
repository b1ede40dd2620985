import { randomFillSync } from 'node:crypto';
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
  label: 'lbl',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** An id as newId makes it: the kind's prefix and a lower-case UUIDv7. */
const idPattern = (kind: IdKind) => new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`);
/** For values that reach the service outside the contract's validation (headers, form fields, socket frames). */
export const TENANT_ID = idPattern('tenant');
export const CONVERSATION_ID = idPattern('conversation');

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${newUuid()}`;
}

// uuid's v7 asks Web Crypto for 16 random bytes at every call, which showed in a sent message's profile.
// The bytes come from a pool filled 4 KiB at a time instead; the
// time and the sequence are kept as uuid keeps them (its updateV7State, not exported): ids made in one
// millisecond still grow.
const pool = Buffer.allocUnsafe(4096);
let taken = pool.length;
const state = { msecs: -Infinity, seq: 0 };

export function newUuid(): string {
  if (taken === pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  const random = pool.subarray(taken, (taken += 16));
  const now = Date.now();
  if (now > state.msecs) {
    state.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
    state.msecs = now;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return uuidv7({ random, msecs: state.msecs, seq: state.seq });
}
