import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { $api } from '../../../lib/api.ts';
import type { Conversation } from '../../../lib/cache.ts';
import type { TeamMember } from '../../../lib/hooks.ts';
import { useConversationActions } from '../api/queries.ts';

const PRIORITIES: Conversation['priority'][] = ['low', 'normal', 'high', 'urgent'];

/** Assign to me, transfer, close and reopen: only what the member may do is offered. */
export function Actions({ conversation, me, team }: { conversation: Conversation; me: string | undefined; team: TeamMember[] }) {
  const actions = useConversationActions(conversation.id);
  const [transferring, setTransferring] = useState(false);
  const [naming, setNaming] = useState(false);
  const closed = conversation.status === 'closed';
  const mine = !!me && conversation.assigned_user_id === me;
  const error = actions.assign.error ?? actions.transfer.error ?? actions.close.error ?? actions.reopen.error ?? actions.update.error;
  const reset = () => [actions.assign, actions.transfer, actions.close, actions.reopen, actions.update].forEach((m) => m.reset());

  return (
    <div className="actions">
      <div className="buttons" role="group" aria-label="Conversation actions">
        {!closed && !mine && me && (
          <button type="button" onClick={() => (reset(), actions.assign.mutate({ ...actions.path, body: { user_id: me } }))} disabled={actions.assign.isPending}>
            Assign to me
          </button>
        )}
        {!closed && (
          <button type="button" aria-expanded={transferring} onClick={() => setTransferring((t) => !t)}>
            Transfer…
          </button>
        )}
        {!closed && (
          <button type="button" aria-keyshortcuts="e" title="Close (e)" onClick={() => (reset(), actions.close.mutate(actions.path))} disabled={actions.close.isPending}>
            Close
          </button>
        )}
        {closed && (
          <button type="button" onClick={() => (reset(), actions.reopen.mutate(actions.path))} disabled={actions.reopen.isPending}>
            Reopen
          </button>
        )}
        <button type="button" aria-expanded={naming} onClick={() => setNaming((n) => !n)}>
          Edit subject
        </button>
        <label className="priority-field">
          Priority{' '}
          <select
            value={conversation.priority}
            disabled={actions.update.isPending}
            onChange={(e) => (reset(), actions.update.mutate({ ...actions.path, body: { priority: e.target.value as Conversation['priority'] } }))}
          >
            {PRIORITIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
      </div>
      {naming && (
        <form
          className="transfer"
          aria-label="Subject"
          onSubmit={(e) => {
            e.preventDefault();
            const subject = String(new FormData(e.currentTarget).get('subject') ?? '').trim();
            reset();
            actions.update.mutate({ ...actions.path, body: { subject: subject || null } }, { onSuccess: () => setNaming(false) });
          }}
        >
          <label htmlFor="subject-input">Subject</label>
          <input id="subject-input" name="subject" defaultValue={conversation.subject ?? ''} maxLength={200} autoFocus />
          <button type="submit" disabled={actions.update.isPending}>
            Save subject
          </button>
          <button type="button" onClick={() => setNaming(false)}>
            Cancel
          </button>
        </form>
      )}
      {transferring && !closed && (
        <TransferForm
          conversation={conversation}
          team={team}
          me={me}
          pending={actions.transfer.isPending}
          onTransfer={(target) => {
            reset();
            actions.transfer.mutate({ ...actions.path, body: target }, { onSuccess: () => setTransferring(false) });
          }}
        />
      )}
      <ErrorText error={error} />
    </div>
  );
}

function TransferForm(props: {
  conversation: Conversation;
  team: TeamMember[];
  me: string | undefined;
  pending: boolean;
  onTransfer: (target: { user_id: string } | { department_id: string }) => void;
}) {
  const departments = useQuery($api.queryOptions('get', '/v1/departments', {}, { staleTime: 300_000 }));
  const people = props.team.filter((m) => m.seat === 'full' && m.user_id !== props.me && m.user_id !== props.conversation.assigned_user_id);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const value = String(new FormData(e.currentTarget).get('target') ?? '');
    const [kind, id] = value.split(':') as [string, string];
    if (!id) return;
    props.onTransfer(kind === 'dep' ? { department_id: id } : { user_id: id });
  };
  return (
    <form className="transfer" onSubmit={submit} aria-label="Transfer the conversation">
      <label htmlFor="transfer-target">Transfer to</label>
      <select id="transfer-target" name="target" required defaultValue="">
        <option value="" disabled>
          Choose a person or a department
        </option>
        {people.length > 0 && (
          <optgroup label="People">
            {people.map((m) => (
              <option key={m.user_id} value={`usr:${m.user_id}`}>
                {m.name}
                {m.presence ? ` (${m.presence})` : ''}
              </option>
            ))}
          </optgroup>
        )}
        {(departments.data?.data.length ?? 0) > 0 && (
          <optgroup label="Departments">
            {departments.data!.data.map((d) => (
              <option key={d.id} value={`dep:${d.id}`}>
                {d.name}
              </option>
            ))}
          </optgroup>
        )}
      </select>
      <button type="submit" disabled={props.pending}>
        Transfer
      </button>
    </form>
  );
}
