import { useQuery } from '@tanstack/react-query';
import { type FormEvent, type KeyboardEvent, useId, useMemo, useRef, useState } from 'react';
import { $api } from '../../../lib/api.ts';
import { useLive } from '../../../lib/hooks.ts';
import { ErrorText } from '../../../components/ErrorText.tsx';
import { useSend, useUpload } from '../api/queries.ts';

/**
 * The answer box. `/` at the start opens the canned responses (arrows to choose, Enter or Tab to take
 * one, Escape to dismiss); Enter sends and Shift+Enter starts a new line. An internal note reaches the
 * team only. A refused send keeps the text.
 */
export function ReplyBox({ conversationId }: { conversationId: string }) {
  const live = useLive();
  const [text, setText] = useState('');
  const [internal, setInternal] = useState(false);
  const [active, setActive] = useState(0);
  const [dismissed, setDismissed] = useState(false);
  const key = useRef(crypto.randomUUID());
  const typingSent = useRef(0);
  const send = useSend(conversationId);
  const upload = useUpload(conversationId);
  const [files, setFiles] = useState<{ id: string; name: string }[]>([]);
  const fileInput = useRef<HTMLInputElement>(null);
  const listId = useId();
  const canned = useQuery($api.queryOptions('get', '/v1/canned-responses', { params: { query: { limit: 100 } } }, { staleTime: 300_000 }));

  const matches = useMemo(() => {
    const m = /^\/(\S*)$/.exec(text);
    if (!m || dismissed) return [];
    const wanted = m[1]!.toLowerCase();
    return (canned.data?.data ?? []).filter((c) => c.shortcut.toLowerCase().replace(/^\//, '').startsWith(wanted) || c.title.toLowerCase().includes(wanted));
  }, [text, canned.data, dismissed]);
  const open = matches.length > 0;

  const take = (index: number) => {
    const picked = matches[index];
    if (!picked) return;
    setText(picked.content);
    setActive(0);
  };

  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    const content = text.trim();
    if (!content || send.isPending) return;
    send.mutate(
      { content, internal, key: key.current, attachments: files.map((f) => f.id) },
      {
        onSuccess: () => {
          setText('');
          setFiles([]);
          key.current = crypto.randomUUID();
          if (!internal) live.sendTyping(conversationId, false);
        },
      },
    );
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (open) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : matches.length - 1)) % matches.length);
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        take(active);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        setDismissed(true);
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      submit();
    }
    // Escape leaves the box: j, k, r and e work again.
    if (e.key === 'Escape') e.currentTarget.blur();
  };

  const onChange = (value: string) => {
    setText(value);
    setDismissed(false);
    setActive(0);
    // Typing signals to the visitor, at most every 3 s; a note is no business of theirs.
    if (!internal && value && Date.now() - typingSent.current > 3_000) {
      typingSent.current = Date.now();
      live.sendTyping(conversationId, true);
    }
  };

  return (
    <form className={`reply${internal ? ' internal' : ''}`} onSubmit={submit} aria-label="Reply">
      {open && (
        <ul className="canned" id={listId} role="listbox" aria-label="Canned responses">
          {matches.map((c, i) => (
            <li key={c.id} id={`${listId}-${i}`} role="option" aria-selected={i === active} onMouseDown={(e) => (e.preventDefault(), take(i))}>
              <strong>{c.shortcut}</strong> {c.title}
            </li>
          ))}
        </ul>
      )}
      <label htmlFor="reply-text" className="visually-hidden">
        {internal ? 'Internal note' : 'Reply to the visitor'}
      </label>
      <textarea
        id="reply-text"
        value={text}
        rows={3}
        placeholder={internal ? 'Internal note: the team sees it, the visitor does not' : 'Write a reply… (/ for canned responses)'}
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={open ? listId : undefined}
        aria-activedescendant={open ? `${listId}-${active}` : undefined}
        aria-describedby={send.error ? 'reply-error' : undefined}
        maxLength={10000}
        onChange={(e) => onChange(e.target.value)}
        onKeyDown={onKeyDown}
      />
      {files.length > 0 && (
        <ul className="chips" aria-label="Files to send">
          {files.map((f) => (
            <li key={f.id}>
              {f.name}{' '}
              <button type="button" aria-label={`Remove ${f.name}`} onClick={() => setFiles((all) => all.filter((x) => x.id !== f.id))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {upload.isPending && <p role="status">Uploading {upload.variables?.name}…</p>}
      <ErrorText error={upload.error} />
      {send.isPaused && (
        <p className="notice" role="status">
          You are offline: this is sent as soon as you are back.
        </p>
      )}
      <div className="reply-actions">
        <label className="toggle">
          <input type="checkbox" checked={internal} onChange={(e) => setInternal(e.target.checked)} /> Internal note
        </label>
        <label className="attach">
          Attach a file
          <input
            ref={fileInput}
            type="file"
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (!file) return;
              upload.mutate(file, {
                onSuccess: (stored) => setFiles((all) => [...all, { id: stored.id, name: stored.name }]),
                onSettled: () => {
                  if (fileInput.current) fileInput.current.value = '';
                },
              });
            }}
          />
        </label>
        <button type="submit" className="primary" disabled={send.isPending || !text.trim()}>
          {internal ? 'Add note' : 'Send'}
        </button>
      </div>
    </form>
  );
}
