// The load model of `npm run bench:capacity`, apart from the script so that `npm run bench:docs` describes
// in docs/benchmarks.md the very numbers the benchmark runs (seconds are drawn uniformly from each range).
export const MODEL = {
  /** Each tenant: 25 agents and 225 visitors' places; people beyond a multiple of 250 make a smaller last tenant. */
  tenantPeople: 250,
  agentsPerTenant: 25,
  /** A visitor opens the bubble (session, socket, a page view), then views 1–3 more pages 10–30 s apart. */
  pages: [1, 3],
  pageGapS: [10, 30],
  /** Then starts a conversation and writes every 20–60 s, 3–6 messages in all; 1 in 10 mentions a refund. */
  messages: [3, 6],
  writeGapS: [20, 60],
  refundShare: 0.1,
  /** 1 in 4 uses the help widget, whose FAQ bot answers the first message; the second asks for a person. */
  botShare: 0.25,
  answerS: [5, 15],
  transferShare: 0.1,
  closeS: [5, 10],
  listS: [30, 60],
  leaveS: [1, 3],
  returnS: [1, 5],
  /** A step's new places start within the ramp; this share of them chat at once (1–6 messages left). */
  chattingAtStart: 0.8,
};

/** A step passes while all three hold. */
export const LIMITS = { failedShare: 0.00025, p99Ms: 500, deliveryP99Ms: 500 };

const range = (r: number[], unit = '') => `${r[0]}–${r[1]}${unit}`;
const oneIn = (share: number) => `1 in ${Math.round(1 / share)}`;

/** The model in words, for docs/benchmarks.md. */
export function describeModel(): string {
  const m = MODEL;
  const visitors = m.tenantPeople - m.agentsPerTenant;
  return `## The capacity model

\`npm run bench:capacity\` plays a support day against one instance and counts the simultaneous people it
serves, as Mattermost counts users per 2 vCPU: on PostgreSQL + Redis (\`DATABASE_URL\`, \`REDIS_URL\`), and on the
embedded default (PGlite in the service's process, no Redis). The load generator is one process on the same
two cores; its CPU is measured with the rest. People come in tenants of ${m.tenantPeople}: ${m.agentsPerTenant} agents and
${visitors} visitors' places (a smaller last tenant for the rest). Each tenant has least-loaded routing, two
widgets (a shop's, and a help widget whose FAQ bot answers from a canned response), a webhook for
\`conversation.created\`, \`message.created\` and \`conversation.closed\` to a loopback receiver, and two
workflows (a message mentioning a refund makes its conversation urgent; a closed conversation is posted to
the receiver).

- **Visitors** open the bubble (a widget session, the visitor socket, a page view), view ${range(m.pages)} more pages
  ${range(m.pageGapS, ' s')} apart, start a conversation and write every ${range(m.writeGapS, ' s')}, ${range(m.messages)} messages in all
  (${oneIn(m.refundShare)} mentions a refund). ${oneIn(m.botShare)} comes through the help widget: the bot answers the first
  message, the second asks for a person and the bot hands off to routing. The visitor leaves ${range(m.leaveS, ' s')} after
  the conversation is closed, and a new visitor takes the place ${range(m.returnS, ' s')} later.
- **Agents** hold the team app's socket (a ticket), list their open conversations every ${range(m.listS, ' s')}, open
  each conversation routing gives them (the conversation and its messages), answer ${range(m.answerS, ' s')} after the
  visitor writes, transfer ${oneIn(m.transferShare)} conversations to another agent after their first answer, and close
  ${range(m.closeS, ' s')} after answering the visitor's last message. Their logins are refreshed every ten minutes.
- **Steps** ramp the people (from 50 or 100 people: 250, 500, 1,000, 1,500, 2,000, …): each step's new places start within the ramp,
  ${Math.round(m.chattingAtStart * 100)}% of them chatting at once, as a day in progress has them; after settling, a minute is
  measured. A step passes while at most ${LIMITS.failedShare * 100}% of requests fail (any answer but 2xx, a socket
  that does not open or drops, a message that does not reach all its sockets within 10 s, a conversation
  nobody closed 180 s after the visitor's last message), the p99 of every
  request class is at most ${LIMITS.p99Ms} ms, and the p99 of a message's delivery (from its send to the last of
  its sockets: every agent socket of the tenant and the visitor's) is at most ${LIMITS.deliveryP99Ms} ms. The last
  passing step is the capacity; the run prints, there, the messages a second, the service's CPU (its
  event loop's thread apart, and the loop's delay), RSS, and PostgreSQL's, the load generator's and the rest
  of the machine's CPU.
- **Rate limits** stay at their defaults: every visitor and agent sends an address of its own in
  X-Forwarded-For, which the service trusts from loopback (\`TRUST_PROXY=loopback\`, its default), as behind
  a reverse proxy.
- **The soak** (\`npm run bench:capacity -- --soak\`, \`BENCH_SOAK_MINUTES\`, default 60) runs the model at half
  the capacity on record, samples p99 and RSS each minute, and checks the last ten minutes against minutes
  10–20 (within 10%) and that nothing failed.
- **Vacuum.** Where PostgreSQL runs without autovacuum (this machine's development cluster does), the
  script does what autovacuum would, each minute: every table with more dead rows than autovacuum's default
  threshold (50 and 20% of its live rows) is vacuumed and analyzed. Without it the dead versions of the
  rows the model updates pile up for the whole run, and a soak measures that rather than the service.
`;
}
