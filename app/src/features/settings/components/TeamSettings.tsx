import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Field, FormError, SelectField } from '../../../components/Form.tsx';
import { $api, fetchClient, type Schemas, session } from '../../../lib/api.ts';
import { useTeam } from '../../../lib/hooks.ts';
import { useAction, useChosen } from '../api.ts';

type Role = Schemas['Role'];
type Seat = Schemas['Seat'];
const MEMBERS = '/v1/tenants/{id}/members';
const TEAM = '/v1/team/members';

export default function TeamSettings() {
  return (
    <>
      <Members />
      <Departments />
    </>
  );
}

const ROLES: Record<Role, string> = { agent: 'Agent', admin: 'Admin', owner: 'Owner' };

function Members() {
  const tenant = session.tenantId ?? '';
  // Only an owner makes, changes or removes an owner (the API refuses an admin with 403): an admin is offered none of it.
  const { me } = useTeam();
  const owner = me?.role === 'owner';
  const roles = (Object.keys(ROLES) as Role[]).filter((r) => owner || r !== 'owner');
  const members = useQuery($api.queryOptions('get', MEMBERS, { params: { path: { id: tenant }, query: { limit: 100 } } }));
  const invite = useAction(
    (body: Schemas['MemberCreate']) => fetchClient.POST(MEMBERS, { params: { path: { id: tenant } }, body }),
    [MEMBERS, TEAM],
  );
  const change = useAction(
    ({ userId, body }: { userId: string; body: Schemas['MemberUpdate'] }) => fetchClient.PATCH('/v1/tenants/{id}/members/{userId}', { params: { path: { id: tenant, userId } }, body }),
    [MEMBERS, TEAM],
  );
  const remove = useAction((userId: string) => fetchClient.DELETE('/v1/tenants/{id}/members/{userId}', { params: { path: { id: tenant, userId } } }), [MEMBERS, TEAM]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    invite.mutate({ email: String(data.get('email')), role: data.get('role') as Role, seat: data.get('seat') as Seat }, { onSuccess: () => form.reset() });
  };
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      <form onSubmit={submit} noValidate className="inline-form" aria-label="Invite a member">
        <Field label="E-mail" name="email" type="email" required error={invite.error} />
        <SelectField label="Role" name="role" defaultValue="agent" error={invite.error}>
          {roles.map((r) => (
            <option key={r} value={r}>
              {ROLES[r]}
            </option>
          ))}
        </SelectField>
        <SelectField label="Seat" name="seat" defaultValue="full" error={invite.error}>
          <option value="full">Full (answers)</option>
          <option value="lite">Lite (reads)</option>
        </SelectField>
        <button type="submit" className="primary" disabled={invite.isPending}>
          Invite
        </button>
      </form>
      <FormError error={invite.error} fields={['email', 'role', 'seat']} />
      {invite.isSuccess && (
        <p className="notice" role="status">
          Invitation sent to {invite.variables.email}.
        </p>
      )}
      <FormError error={change.error ?? remove.error} fields={[]} />
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">E-mail</th>
            <th scope="col">Role</th>
            <th scope="col">Seat</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(members.data?.data ?? []).map((m) => {
            const locked = !owner && m.role === 'owner';
            return (
              <tr key={m.user_id}>
                <td>{m.name || '—'}</td>
                <td>{m.email}</td>
                <td>
                  {locked ? (
                    ROLES[m.role]
                  ) : (
                    <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => change.mutate({ userId: m.user_id, body: { role: e.target.value as Role } })}>
                      {roles.map((r) => (
                        <option key={r} value={r}>
                          {ROLES[r]}
                        </option>
                      ))}
                    </select>
                  )}
                </td>
                <td>
                  {locked ? (
                    m.seat === 'full' ? 'Full' : 'Lite'
                  ) : (
                    <select aria-label={`Seat of ${m.email}`} value={m.seat} onChange={(e) => change.mutate({ userId: m.user_id, body: { seat: e.target.value as Seat } })}>
                      <option value="full">Full</option>
                      <option value="lite">Lite</option>
                    </select>
                  )}
                </td>
                <td>{m.status === 'invited' ? 'Invited' : 'Active'}</td>
                <td>
                  {m.user_id !== session.userId && !locked && (
                    <button type="button" className="danger" onClick={() => remove.mutate(m.user_id)}>
                      Remove {m.email}
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

function Departments() {
  const departments = useQuery($api.queryOptions('get', '/v1/departments', { params: { query: { limit: 100 } } }));
  const team = useQuery($api.queryOptions('get', TEAM, { params: { query: { include: 'presence' } } }));
  const create = useAction((body: Schemas['DepartmentCreate']) => fetchClient.POST('/v1/departments', { body }), ['/v1/departments', TEAM]);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const description = String(data.get('description') ?? '');
    create.mutate({ name: String(data.get('name')), ...(description ? { description } : {}) }, { onSuccess: () => form.reset() });
  };
  return (
    <section aria-labelledby="departments-heading">
      <h2 id="departments-heading">Departments</h2>
      <form onSubmit={submit} noValidate className="inline-form" aria-label="New department">
        <Field label="Department name" name="name" required maxLength={100} error={create.error} />
        <Field label="Description" name="description" maxLength={1000} error={create.error} />
        <button type="submit" className="primary" disabled={create.isPending}>
          Add department
        </button>
      </form>
      <FormError error={create.error} fields={['name', 'description']} />
      <ul className="cards">
        {(departments.data?.data ?? []).map((d) => (
          <Department key={d.id} department={d} team={team.data?.data ?? []} />
        ))}
      </ul>
    </section>
  );
}

function Department({ department: d, team }: { department: Schemas['Department']; team: Schemas['TeamMember'][] }) {
  const [name, setName] = useState(d.name);
  const rename = useAction((body: Schemas['DepartmentUpdate']) => fetchClient.PATCH('/v1/departments/{id}', { params: { path: { id: d.id } }, body }), ['/v1/departments']);
  const remove = useAction(() => fetchClient.DELETE('/v1/departments/{id}', { params: { path: { id: d.id } } }), ['/v1/departments', TEAM]);
  const ticked = useChosen<boolean>();
  const member = useAction(
    ({ userId, on }: { userId: string; on: boolean }) =>
      on
        ? fetchClient.PUT('/v1/departments/{id}/members/{userId}', { params: { path: { id: d.id, userId } } })
        : fetchClient.DELETE('/v1/departments/{id}/members/{userId}', { params: { path: { id: d.id, userId } } }),
    ['/v1/departments', TEAM],
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    rename.mutate({ name });
  };
  return (
    <li className="card" aria-label={d.name}>
      <form onSubmit={submit} noValidate className="inline-form">
        <Field label={`Name of ${d.name}`} name="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} error={rename.error} />
        <button type="submit">Rename</button>
        <button type="button" className="danger" onClick={() => remove.mutate(undefined)}>
          Delete {d.name}
        </button>
      </form>
      <FormError error={rename.error ?? remove.error ?? member.error} fields={['name']} />
      <fieldset>
        <legend>Members of {d.name}</legend>
        {team.map((m) => (
          <label key={m.user_id} className="check">
            <input
              type="checkbox"
              checked={ticked.shown(m.user_id, d.member_ids.includes(m.user_id))}
              onChange={(e) => {
                ticked.choose(m.user_id, e.target.checked);
                member.mutate({ userId: m.user_id, on: e.target.checked }, { onSettled: () => ticked.settle(m.user_id) });
              }}
            />{' '}
            {m.name || m.email}
          </label>
        ))}
      </fieldset>
    </li>
  );
}
