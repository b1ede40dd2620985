import { ApiFailure, type Conversation, type FailureKind, type Message, type S, type Settings, WidgetApi } from './api.ts';
import { chatIcon, clipIcon, h } from './dom.ts';
import { type SocketFrame, VisitorSocket } from './socket.ts';
import { CSS } from './styles.ts';

export interface ChatOptions {
  widgetId: string;
  apiBase: string;
  user?: S['WidgetUser'] | undefined;
}

const DEFAULTS = { color: '#3355ff', greeting: 'Hi! How can we help?', position: 'bottom-right' } as const;
const TYPING_SHOWN_MS = 8000;
const TYPING_IDLE_MS = 3000;

/** What the visitor is told for each failure: plain words, never a status code or raw JSON. */
function explain(kind: FailureKind, settings: Settings): string {
  switch (kind) {
    case 'offline':
      return 'You appear to be offline. Your message was not sent; we will reconnect as soon as your connection is back.';
    case 'refused':
      return 'Chat is not available on this website.';
    case 'identity':
      return 'Please sign in to this website to chat with us.';
    case 'rate_limited':
      return 'You are sending messages too quickly. Please wait a moment and try again.';
    case 'plan_limit':
      return settings.away_message ?? 'We cannot take new chats right now. Please try again later.';
    case 'closed':
      return 'This conversation has ended.';
    case 'too_large':
      return 'That file is too large: files can be up to 20 MB.';
    case 'not_found':
      return 'That conversation or file is no longer available.';
    case 'invalid':
      return 'That could not be sent. Please check it and try again.';
    default:
      return 'Something went wrong on our side. Please try again in a moment.';
  }
}

const failureOf = (err: unknown): FailureKind => (err instanceof ApiFailure ? err.kind : 'unavailable');

function readableText(hex: string): string {
  // White or near-black text, whichever reads better on the widget's colour (WCAG relative luminance).
  const channel = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.4 ? '#111111' : '#ffffff';
}

export class Chat {
  readonly #options: ChatOptions;
  readonly #api: WidgetApi;
  readonly #socket: VisitorSocket;
  readonly #storageKey: string;
  #settings: Settings = {};
  #conversation: Conversation | undefined;
  readonly #messages = new Map<string, Message>();
  #unread = 0;
  #isOpen = false;
  #attachments: { id: string; name: string }[] = [];
  #typingSent = 0;
  #typingIdle: ReturnType<typeof setTimeout> | undefined;
  #typingShown: ReturnType<typeof setTimeout> | undefined;
  #loadOnWelcome = true;
  /** Enter was pressed while a send was in flight: what the box holds then is sent once that one is stored. */
  #sendQueued = false;

  readonly #ui = {
    root: h('div', { class: 'root', part: 'root' }),
    bubble: h('button', { class: 'bubble', type: 'button', 'aria-expanded': 'false', 'aria-controls': 'chat-panel', 'aria-label': 'Open chat' }),
    badge: h('span', { class: 'badge', 'aria-hidden': 'true', hidden: true }),
    panel: h('section', { class: 'panel', id: 'chat-panel', role: 'dialog', 'aria-labelledby': 'chat-title', 'aria-describedby': 'chat-greeting', hidden: true }),
    greeting: h('p', { id: 'chat-greeting' }),
    status: h('div', { class: 'status', role: 'status', hidden: true }),
    away: h('div', { class: 'notice', role: 'note', hidden: true }),
    alert: h('div', { class: 'alert', role: 'alert', hidden: true }),
    log: h('ol', { class: 'log', role: 'log', 'aria-label': 'Messages', tabindex: '0' }),
    typing: h('div', { class: 'typing', 'aria-live': 'polite' }),
    survey: h('form', { class: 'survey', hidden: true }),
    ended: h('div', { class: 'ended', hidden: true }),
    composer: h('form', { class: 'composer' }),
    input: h('textarea', { id: 'chat-input', rows: '1', placeholder: 'Write a message…', maxlength: '10000' }),
    send: h('button', { class: 'primary', type: 'submit' }, 'Send'),
    file: h('input', { type: 'file', 'aria-label': 'Attach a file' }),
    chips: h('div', { class: 'chips', hidden: true }),
  };

  constructor(options: ChatOptions) {
    this.#options = options;
    this.#api = new WidgetApi(options.apiBase);
    this.#storageKey = `chat-widget:${options.widgetId}`;
    this.#socket = new VisitorSocket((last) => this.#api.socketUrl(last), {
      frame: (frame) => this.#onFrame(frame),
      state: (state) => this.#showStatus(state === 'reconnecting' ? 'Connection lost. Reconnecting…' : undefined),
      expired: () => void this.#restartSession(),
    });
  }

  /** Renders the bubble at once, then starts (or resumes) the visitor's session. */
  mount(): void {
    const host = document.createElement('chat-widget');
    const shadow = host.attachShadow({ mode: 'open' });
    shadow.append(h('style', {}, CSS), this.#build());
    document.body.append(host);
    this.#apply({});
    void this.#start();
  }

  open(): void {
    this.#toggle(true);
  }

  close(): void {
    this.#toggle(false);
  }

  /** A signed-in user of the site: the session is started again with their verified e-mail. */
  async identify(user: S['WidgetUser']): Promise<void> {
    this.#options.user = user;
    await this.#restartSession();
  }

  #build(): HTMLElement {
    const ui = this.#ui;
    ui.bubble.append(chatIcon(), ui.badge);
    ui.bubble.addEventListener('click', () => this.#toggle(!this.#isOpen));
    const closeButton = h('button', { class: 'close', type: 'button', 'aria-label': 'Close chat', onclick: () => this.#toggle(false) }, '×');
    ui.panel.append(
      h('div', { class: 'head' }, h('div', { class: 'titles' }, h('h2', { id: 'chat-title' }, 'Chat with us'), ui.greeting), closeButton),
      ui.status,
      ui.away,
      ui.alert,
      ui.log,
      ui.typing,
      ui.survey,
      ui.ended,
      ui.chips,
      ui.composer,
    );
    ui.panel.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.#toggle(false);
    });
    ui.composer.append(
      h('label', { class: 'sr-only', for: 'chat-input' }, 'Message'),
      ui.input,
      h('label', { class: 'attach', title: 'Attach a file' }, ui.file, clipIcon()),
      ui.send,
    );
    ui.composer.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#send();
    });
    ui.input.addEventListener('keydown', (event) => {
      // Enter sends, Shift+Enter is a new line, as in every chat.
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void this.#send();
      }
    });
    ui.input.addEventListener('input', () => this.#typing(true));
    ui.file.addEventListener('change', () => void this.#upload());
    ui.root.append(ui.panel, ui.bubble);
    return ui.root;
  }

  #apply(settings: Settings): void {
    this.#settings = settings;
    const color = settings.color ?? DEFAULTS.color;
    this.#ui.root.style.setProperty('--accent', color);
    this.#ui.root.style.setProperty('--on-accent', readableText(color));
    this.#ui.root.classList.toggle('left', settings.position === 'bottom-left');
    this.#ui.greeting.textContent = settings.greeting ?? DEFAULTS.greeting;
  }

  async #start(): Promise<void> {
    try {
      await this.#session();
      this.#socket.connect();
    } catch (err) {
      const kind = failureOf(err);
      this.#fail(kind);
      // Loaded without a network: start once there is one.
      if (kind === 'offline') addEventListener('online', () => void this.#restartSession(), { once: true });
    }
  }

  async #session(): Promise<void> {
    let previous: string | undefined;
    try {
      previous = localStorage.getItem(this.#storageKey) ?? undefined;
    } catch {
      previous = undefined;
    }
    const page: S['WidgetSessionCreate'] = { widget_id: this.#options.widgetId, page_url: location.href.slice(0, 2048) };
    if (document.title) page.page_title = document.title.slice(0, 500);
    if (document.referrer) page.referrer = document.referrer.slice(0, 2048);
    if (this.#options.user) page.user = this.#options.user;
    const session = await this.#api.startSession(page, previous).catch((err: unknown) => {
      // A site that sent an identity the widget does not accept is told so, not "unavailable here".
      if (err instanceof ApiFailure && err.kind === 'refused' && this.#options.user) throw new ApiFailure('identity');
      throw err;
    });
    this.#api.token = session.visitor_token;
    try {
      localStorage.setItem(this.#storageKey, session.visitor_token);
    } catch {
      // Storage refused (private mode, a sandbox): the visitor is new on each page.
    }
    this.#apply(session.widget.settings);
    // Nobody available as the visitor arrives: say so up front, and that writing still works; outside
    // business hours, also when they begin again (or no bubble at all, if the widget says so).
    const { team_available: available, open, next_open_at: nextOpen } = session.widget;
    const away = session.widget.settings.away_message ?? 'We are away right now. Leave a message and we will get back to you.';
    const back = !open && nextOpen ? ` We are back ${new Date(nextOpen).toLocaleString([], { weekday: 'long', hour: 'numeric', minute: '2-digit' })}.` : '';
    this.#ui.away.textContent = available ? '' : away + back;
    this.#ui.away.hidden = available;
    this.#ui.root.dataset.hours = open ? 'open' : 'closed';
    this.#ui.root.hidden = !open && session.widget.settings.hide_outside_hours === true;
  }

  /** A new token for the same visitor (expired, revoked, or a new identity), and the socket on it. */
  async #restartSession(): Promise<void> {
    try {
      await this.#session();
      // Refused before (no identity yet, say): the chat is usable now.
      this.#clearAlert();
      this.#render();
      this.#loadOnWelcome = true;
      this.#socket.connect();
    } catch (err) {
      this.#fail(failureOf(err));
    }
  }

  #fail(kind: FailureKind): void {
    this.#showAlert(explain(kind, this.#settings));
    if (kind === 'refused' || kind === 'identity') {
      this.#ui.composer.hidden = true;
      this.#ui.root.dataset.state = kind;
    }
  }

  #onFrame(frame: SocketFrame): void {
    if (frame.type === 'welcome') {
      this.#ui.root.dataset.state = 'connected';
      // Connected first, loaded second: whatever happens in between arrives on the socket (and is
      // de-duplicated). A socket that had no event to resume from cannot be replayed what it missed.
      if (this.#loadOnWelcome || !this.#socket.resuming) {
        this.#loadOnWelcome = false;
        void this.#loadHistory();
      }
      return;
    }
    if (frame.type === 'resync_required') return void this.#loadHistory();
    if (!('data' in frame)) return;
    const current = this.#conversation?.id;
    switch (frame.type) {
      case 'message.created':
        if (frame.data.conversation_id === current) this.#add(frame.data.message, true);
        break;
      case 'conversation.created':
        if (!current || this.#conversation?.status === 'closed') void this.#loadHistory();
        break;
      case 'conversation.closed':
        // A close without a survey (a workflow's skip_survey) names none: the visitor is shown the end at once.
        if (frame.data.conversation_id === current && this.#conversation) {
          this.#conversation = { ...this.#conversation, status: 'closed', survey: frame.data.survey_id ? { id: frame.data.survey_id, status: 'pending', rating: null, comment: null, answered_at: null } : null };
          this.#render();
        }
        break;
      case 'conversation.reopened':
        if (frame.data.conversation_id === current && this.#conversation) {
          this.#conversation = { ...this.#conversation, status: 'open', survey: null };
          this.#render();
        }
        break;
      case 'typing':
        if (frame.data.conversation_id === current && frame.data.sender_type === 'user') this.#showTyping(frame.data.is_typing);
        break;
    }
  }

  async #loadHistory(): Promise<void> {
    try {
      const { data } = await this.#api.listConversations();
      const latest = data[0];
      if (latest && latest.id !== this.#conversation?.id) this.#resetLog();
      this.#conversation = latest;
      if (latest) {
        const page = await this.#api.listMessages(latest.id);
        for (const message of [...page.data].reverse()) this.#add(message, false);
      }
      this.#render();
    } catch (err) {
      this.#fail(failureOf(err));
    }
  }

  #resetLog(): void {
    this.#messages.clear();
    this.#ui.log.replaceChildren();
  }

  /** Adds a message once, in order of time, whichever way it arrived (REST answer, socket, replay). */
  #add(message: Message, live: boolean): void {
    if (this.#messages.has(message.id)) return;
    this.#messages.set(message.id, message);
    // The survey's prompt is asked by the form below the log: in the log too, it was asked twice.
    if (message.type === 'survey') return;
    const item = this.#messageItem(message);
    const after = [...this.#ui.log.children].find((li) => (li as HTMLElement).dataset.at! > message.created_at);
    this.#ui.log.insertBefore(item, after ?? null);
    this.#ui.log.scrollTop = this.#ui.log.scrollHeight;
    if (message.sender_type !== 'visitor') {
      this.#showTyping(false);
      if (live && (!this.#isOpen || document.hidden) && message.sender_type !== 'system') this.#setUnread(this.#unread + 1);
    }
  }

  #messageItem(message: Message): HTMLLIElement {
    const from = message.sender_type === 'visitor' ? 'visitor' : message.sender_type === 'system' ? 'system' : 'team';
    const who = from === 'visitor' ? 'You' : from === 'team' ? 'Team' : 'Notice';
    const li = h('li', { class: `msg ${from}`, 'data-id': message.id, 'data-at': message.created_at }, h('span', { class: 'sr-only' }, `${who}: `), message.content);
    for (const file of message.attachments) {
      li.append(h('button', { class: 'file', type: 'button', 'aria-label': `Download ${file.name}`, onclick: () => void this.#download(file.id) }, clipIcon(), file.name));
    }
    return li;
  }

  #render(): void {
    const c = this.#conversation;
    const closed = c?.status === 'closed';
    const surveyPending = closed && c?.survey?.status === 'pending';
    this.#ui.composer.hidden = closed;
    this.#ui.chips.hidden = closed || this.#attachments.length === 0;
    this.#ui.survey.hidden = !surveyPending;
    this.#ui.ended.hidden = !closed || surveyPending;
    if (surveyPending) this.#buildSurvey(c!.id);
    if (closed && !surveyPending) this.#buildEnded(c?.survey?.status === 'answered');
    // The form or the end note takes room from the log: keep its last line (the close) in sight above them.
    if (closed) this.#ui.log.scrollTop = this.#ui.log.scrollHeight;
  }

  #buildSurvey(conversationId: string): void {
    const form = this.#ui.survey;
    if (form.dataset.for === conversationId) return;
    form.dataset.for = conversationId;
    const stars = h('div', { class: 'stars' });
    for (let rating = 1; rating <= 5; rating++) {
      stars.append(h('label', {}, h('input', { type: 'radio', name: 'rating', value: String(rating), required: true, 'aria-label': `${rating} out of 5` }), h('span', { 'aria-hidden': 'true' }, `${rating}★`)));
    }
    const comment = h('textarea', { name: 'comment', maxlength: '1000', 'aria-label': 'Comment (optional)', placeholder: 'Anything to add? (optional)' });
    const submit = h('button', { class: 'primary', type: 'submit' }, 'Send rating');
    form.replaceChildren(h('fieldset', {}, h('legend', {}, 'How was your chat?'), stars), comment, submit);
    form.onsubmit = async (event) => {
      event.preventDefault();
      const rating = Number((form.querySelector('input[name="rating"]:checked') as HTMLInputElement | null)?.value);
      if (!rating) return;
      submit.disabled = true;
      try {
        await this.#api.answerSurvey(conversationId, { rating, ...(comment.value.trim() ? { comment: comment.value.trim() } : {}) });
        this.#clearAlert();
      } catch (err) {
        // Answered already (another tab): the survey is done either way.
        if (!(err instanceof ApiFailure && err.code === 'ERR_CONFLICT')) {
          submit.disabled = false;
          return this.#showAlert(explain(failureOf(err), this.#settings));
        }
      }
      if (this.#conversation?.survey) this.#conversation = { ...this.#conversation, survey: { ...this.#conversation.survey, status: 'answered', rating } };
      this.#render();
      (this.#ui.ended.querySelector('button') as HTMLButtonElement | null)?.focus();
    };
  }

  #buildEnded(thanked: boolean): void {
    this.#ui.ended.replaceChildren(
      h('p', {}, thanked ? 'Thank you for your feedback!' : 'This conversation has ended.'),
      h('button', { class: 'primary', type: 'button', onclick: () => this.#startOver() }, 'Start a new conversation'),
    );
  }

  #startOver(): void {
    this.#conversation = undefined;
    this.#resetLog();
    this.#render();
    this.#ui.input.focus();
  }

  async #send(): Promise<void> {
    const written = this.#ui.input.value;
    const content = written.trim();
    if (!content) return;
    if (this.#ui.send.disabled) {
      this.#sendQueued = true;
      return;
    }
    this.#ui.send.disabled = true;
    let stored = false;
    const attachments = this.#attachments.map((a) => a.id);
    const body: S['WidgetMessageCreate'] = { content, ...(attachments.length ? { attachments } : {}) };
    try {
      const c = this.#conversation;
      if (!c || c.status === 'closed') {
        if (c) this.#startOver();
        this.#conversation = await this.#api.startConversation(body);
        // The first message is in the conversation, not in the answer: read it back (the socket may bring it too).
        const page = await this.#api.listMessages(this.#conversation.id);
        for (const message of [...page.data].reverse()) this.#add(message, false);
      } else {
        this.#add(await this.#api.sendMessage(c.id, body), false);
      }
      // Only once it is stored does the text leave the box: a failed send keeps what the visitor wrote,
      // and what they wrote while it was on its way stays for the next.
      const now = this.#ui.input.value;
      this.#ui.input.value = now.startsWith(written) ? now.slice(written.length).trimStart() : now;
      stored = true;
      this.#attachments = this.#attachments.filter((a) => !attachments.includes(a.id));
      this.#renderChips();
      this.#typing(false);
      this.#clearAlert();
      this.#render();
    } catch (err) {
      const kind = failureOf(err);
      if (kind === 'closed' && this.#conversation) {
        this.#conversation = { ...this.#conversation, status: 'closed' };
        this.#render();
      }
      if (kind === 'expired') void this.#restartSession();
      this.#showAlert(explain(kind, this.#settings));
    } finally {
      this.#ui.send.disabled = false;
    }
    // After a refusal the box is left to the visitor: sending it again at once would be refused again.
    const queued = this.#sendQueued;
    this.#sendQueued = false;
    if (stored && queued) await this.#send();
  }

  async #upload(): Promise<void> {
    const file = this.#ui.file.files?.[0];
    this.#ui.file.value = '';
    if (!file) return;
    if (file.size > 20 * 1024 * 1024) return this.#showAlert(explain('too_large', this.#settings));
    try {
      const stored = await this.#api.upload(file, this.#conversation?.status === 'open' ? this.#conversation.id : undefined);
      this.#attachments.push({ id: stored.id, name: stored.name });
      this.#renderChips();
      this.#clearAlert();
    } catch (err) {
      this.#showAlert(explain(failureOf(err), this.#settings));
    }
  }

  #renderChips(): void {
    this.#ui.chips.replaceChildren(
      ...this.#attachments.map((a) =>
        h('span', { class: 'chip' }, a.name, h('button', { type: 'button', 'aria-label': `Remove ${a.name}`, onclick: () => {
          this.#attachments = this.#attachments.filter((x) => x.id !== a.id);
          this.#renderChips();
        } }, '×')),
      ),
    );
    this.#ui.chips.hidden = this.#attachments.length === 0;
  }

  async #download(id: string): Promise<void> {
    // Opened before the await: a window opened after it counts as a pop-up and is blocked.
    const target = window.open('', '_blank');
    try {
      const file = await this.#api.file(id);
      if (target) target.location.href = file.url;
      else location.href = file.url;
    } catch (err) {
      target?.close();
      this.#showAlert(explain(failureOf(err), this.#settings));
    }
  }

  #typing(isTyping: boolean): void {
    const id = this.#conversation?.status === 'open' ? this.#conversation.id : undefined;
    clearTimeout(this.#typingIdle);
    if (!id) return;
    const now = Date.now();
    if (isTyping) {
      this.#typingIdle = setTimeout(() => this.#typing(false), TYPING_IDLE_MS);
      if (now - this.#typingSent < TYPING_IDLE_MS) return;
      this.#typingSent = now;
    } else {
      if (this.#typingSent === 0) return;
      this.#typingSent = 0;
    }
    this.#socket.send({ type: 'typing', conversation_id: id, is_typing: isTyping });
  }

  #showTyping(isTyping: boolean): void {
    clearTimeout(this.#typingShown);
    this.#ui.typing.textContent = isTyping ? 'The team is typing…' : '';
    // A "stopped" frame can be lost with a dropped connection: the indicator does not outlive it for long.
    if (isTyping) this.#typingShown = setTimeout(() => this.#showTyping(false), TYPING_SHOWN_MS);
  }

  #toggle(open: boolean): void {
    if (open === this.#isOpen) return;
    this.#isOpen = open;
    this.#ui.panel.hidden = !open;
    this.#ui.root.classList.toggle('is-open', open);
    this.#ui.bubble.setAttribute('aria-expanded', String(open));
    if (open) {
      this.#setUnread(0);
      this.#ui.log.scrollTop = this.#ui.log.scrollHeight;
      const target = !this.#ui.composer.hidden ? this.#ui.input : (this.#ui.panel.querySelector('.close') as HTMLElement);
      target.focus();
    } else {
      this.#ui.bubble.focus();
    }
  }

  #setUnread(count: number): void {
    this.#unread = count;
    this.#ui.badge.textContent = String(count);
    this.#ui.badge.hidden = count === 0;
    this.#ui.bubble.setAttribute('aria-label', count === 0 ? 'Open chat' : `Open chat, ${count} unread ${count === 1 ? 'message' : 'messages'}`);
  }

  #showStatus(text: string | undefined): void {
    this.#ui.status.textContent = text ?? '';
    this.#ui.status.hidden = !text;
    if (text) this.#ui.root.dataset.state = 'reconnecting';
  }

  #showAlert(text: string): void {
    this.#ui.alert.textContent = text;
    this.#ui.alert.hidden = false;
  }

  #clearAlert(): void {
    this.#ui.alert.hidden = true;
    this.#ui.alert.textContent = '';
  }
}
