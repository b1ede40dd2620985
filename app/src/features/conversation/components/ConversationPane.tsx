import { useMutationState, useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { session } from '../../../lib/api.ts';
import { useLive, useTeam } from '../../../lib/hooks.ts';
import { conversationOptions, sendKey, useConversationActions, useMarkRead } from '../api/queries.ts';
import { Actions } from './Actions.tsx';
import { Labels } from './Labels.tsx';
import { Snooze, snoozeText } from './Snooze.tsx';
import { ReplyBox } from './ReplyBox.tsx';
import { Thread } from './Thread.tsx';
import { VisitorPanel } from './VisitorPanel.tsx';

const STATUS = { open: 'Waiting, unassigned', assigned: 'Assigned', closed: 'Closed' } as const;

/** One conversation: the thread, what the member may do with it, and who the visitor is. */
export function ConversationPane({ id }: { id: string }) {
  const live = useLive();
  const { team, me, readOnly } = useTeam();
  const members = team.data?.data ?? [];
  const conversation = useQuery(conversationOptions(id));
  const markRead = useMarkRead(id);
  const heading = useRef<HTMLHeadingElement>(null);
  const c = conversation.data;
  const unread = c?.unread_count ?? 0;
  const sends = useMutationState({ filters: { mutationKey: sendKey(id) }, select: (m) => m.state });
  const lastSend = sends.at(-1);

  useEffect(() => {
    live.reading = id;
    heading.current?.focus();
    return () => {
      if (live.reading === id) live.reading = undefined;
    };
  }, [id, live]);
  // r: to the reply box; e: close the conversation (done with it). From anywhere but a field.
  const actions = useConversationActions(id);
  const closable = !!c && c.status !== 'closed' && !readOnly;
  const close = actions.close.mutate;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      if (e.altKey || e.ctrlKey || e.metaKey || target.closest('input, textarea, select, [contenteditable]')) return;
      if (e.key === 'e' && closable) {
        e.preventDefault();
        close({ params: { path: { id } } });
        return;
      }
      if (e.key !== 'r') return;
      const box = document.getElementById('reply-text');
      if (!box) return;
      e.preventDefault();
      box.focus();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [id, closable, close]);
  // A visitor message read as it comes in (the conversation on screen) is marked read on the server too.
  useEffect(
    () =>
      live.onEvent((event) => {
        if (event.type !== 'message.created' || event.data.conversation_id !== id || event.data.message.sender_type !== 'visitor') return;
        if (document.visibilityState === 'visible') markRead.mutate();
      }),
    // markRead is a new object each render; its mutate is what counts, and it does not change.
    [live, id, markRead.mutate],
  );
  // Unread while on screen: read. A tab in the background reads nothing until it is looked at again.
  useEffect(() => {
    const readIfSeen = () => {
      if (unread > 0 && document.visibilityState === 'visible') markRead.mutate();
    };
    readIfSeen();
    document.addEventListener('visibilitychange', readIfSeen);
    return () => document.removeEventListener('visibilitychange', readIfSeen);
  }, [id, unread, markRead.mutate]);

  if (conversation.error) return <ErrorText error={conversation.error} />;
  if (!c) return <p className="muted">Loading the conversation…</p>;
  const assignee = c.assigned_user_id ? (c.assigned_user_id === session.userId ? 'you' : (members.find((m) => m.user_id === c.assigned_user_id)?.name ?? 'a teammate')) : undefined;
  const typing = live.typing.get(id);

  return (
    <section className="conversation" aria-labelledby="conversation-heading">
      <header>
        <h2 id="conversation-heading" ref={heading} tabIndex={-1}>
          {c.subject ?? 'Conversation with a visitor'}
        </h2>
        <p className="status" data-status={c.status}>
          {STATUS[c.status]}
          {assignee && ` to ${assignee}`}
          {c.priority !== 'normal' && ` · ${c.priority} priority`}
          {snoozeText(c) && <span className="snoozed"> · {snoozeText(c)}</span>}
          {c.satisfaction && (
            <span className="rating">
              {' '}
              · Rated {c.satisfaction.rating} of 5{c.satisfaction.comment ? `: “${c.satisfaction.comment}”` : ''}
            </span>
          )}
        </p>
        {!readOnly && <Actions conversation={c} me={me?.user_id ?? session.userId} team={members} />}
        <div className="organize">
          <Labels conversation={c} readOnly={readOnly} />
          {!readOnly && <Snooze conversation={c} />}
        </div>
      </header>
      <div className="body">
        <Thread id={id} me={session.userId} team={members} />
        {c.visitor_id && <VisitorPanel visitorId={c.visitor_id} conversationId={id} />}
      </div>
      <p className="typing" aria-live="polite">
        {typing ? 'The visitor is typing…' : ''}
      </p>
      {lastSend?.status === 'error' && <ErrorText error={lastSend.error} id="reply-error" />}
      <ErrorText error={actions.close.error} />
      {readOnly ? (
        <p className="notice">Your seat is read-only: you can read this conversation but not answer or handle it.</p>
      ) : c.status === 'closed' ? (
        <p className="notice">This conversation is closed. Reopen it to answer.</p>
      ) : (
        <ReplyBox conversationId={id} key={id} />
      )}
    </section>
  );
}
