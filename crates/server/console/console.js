// toolsmith console: one account's agents and runs, in the browser, served by `toolsmith serve`
// at /console. No build step, no dependencies. Everything the API returns (model output, tool
// arguments and results) is hostile: it reaches the page only as text nodes, never as HTML.
//
// Sections: DOM helpers · formatting · API and session · router · views (sign-in, runs, run,
// agents, start a run) · transcript (stored messages) · live stream (run parts).

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** An element: `h('a', {href, class, onclick}, 'text', child, [more])`. */
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (['hidden', 'disabled', 'open', 'selected', 'required', 'value', 'checked'].includes(key)) el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces `el`'s children, skipping empty ones (`replaceChildren(null)` would write "null"). */
const fill = (el, ...children) => {
  el.replaceChildren();
  return append(el, children);
};

const $ = (id) => document.getElementById(id);
const pre = (value, cls) => h('pre', { class: cls || 'json', tabindex: 0 }, pretty(value));

/** A definition list from [term, value] pairs, skipping empty values. */
function facts(pairs, cls) {
  const dl = h('dl', { class: cls || 'facts' });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === '') continue;
    dl.append(h('div', {}, h('dt', {}, term), h('dd', {}, value)));
  }
  return dl;
}

// ---------------------------------------------------------------------------------------------
// Formatting

const STATUS_WORDS = { idle: 'finished', running: 'running', paused: 'paused', failed: 'failed' };
const STATUS_TEXT = {
  live: 'Running in this service.',
  running: 'Running, but not in this service process: this page reads it again every few seconds.',
  paused: 'Paused: the run waits for the answers below.',
  idle: 'The run is finished.',
  failed: 'The run failed.',
};

function badge(status, word) {
  return h('span', { class: `badge badge-${status}` }, word || STATUS_WORDS[status] || status);
}

function pretty(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

const pad = (n) => String(n).padStart(2, '0');

function absolute(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A `<time>`: "12 s ago", "5 min ago", "3 h ago", else the date; the full time as its title. */
function when(ms) {
  if (!ms) return '—';
  const ago = Math.max(0, Date.now() - ms) / 1000;
  let text;
  if (ago < 5) text = 'just now';
  else if (ago < 60) text = `${Math.floor(ago)} s ago`;
  else if (ago < 3600) text = `${Math.floor(ago / 60)} min ago`;
  else if (ago < 86400) text = `${Math.floor(ago / 3600)} h ago`;
  else text = absolute(ms).slice(0, 16);
  return h('time', { datetime: new Date(ms).toISOString(), title: absolute(ms) }, text);
}

function duration(ms) {
  if (typeof ms !== 'number') return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const num = (n) => Number(n).toLocaleString('en-US');
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1).trimEnd()}…` : text).replace(/\s+/g, ' ');

/** Token usage (`{input: {total, cache_read…}, output: {total, reasoning…}}`) in words. */
function tokens(usage) {
  if (!usage || typeof usage !== 'object') return '';
  const input = usage.input || {};
  const output = usage.output || {};
  const bits = [];
  if (input.total != null) bits.push(`${num(input.total)} in`);
  const cached = input.cache_read ?? input.cacheRead;
  if (cached) bits.push(`${num(cached)} cached`);
  if (output.total != null) bits.push(`${num(output.total)} out`);
  if (output.reasoning) bits.push(`${num(output.reasoning)} reasoning`);
  return bits.length ? `${bits.join(' · ')} tokens` : '';
}

// ---------------------------------------------------------------------------------------------
// API and session

const SECRET_KEY = 'toolsmith.console.secret';
const session = { secret: sessionStorage.getItem(SECRET_KEY), account: null };

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** A JSON API call under /console/api with the account's bearer secret. A 401 signs out. */
async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Authorization: `Bearer ${session.secret}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`/console/api${path}`, {
    method, headers, signal, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    // An empty or non-JSON body: described by the status alone.
  }
  if (response.status === 401) {
    signOut('The secret was not accepted.');
    throw new ApiError(401, 'The secret was not accepted.');
  }
  if (!response.ok) {
    const text = data && typeof data.error === 'string' ? data.error : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, text);
  }
  return data;
}

function showAlert(text) {
  $('alert').textContent = text || '';
}

/** Reports an error of a view's work (not one caused by leaving the view). */
function failed(error, ctx) {
  if (ctx?.signal.aborted || error.name === 'AbortError' || error.status === 401) return;
  showAlert(error instanceof ApiError ? error.message : `Cannot reach the service: ${error.message}`);
}

function signOut(message) {
  sessionStorage.removeItem(SECRET_KEY);
  session.secret = null;
  session.account = null;
  leaveView();
  signInView(message);
}

// ---------------------------------------------------------------------------------------------
// Router: #/runs, #/runs/<threadId>, #/agents, #/new

const main = $('main');
let current = null; // {controller, cleanups}
let watchNext = null; // the thread whose live stream a just-started run view opens at once

function leaveView() {
  if (!current) return;
  current.controller.abort();
  current.cleanups.forEach((fn) => fn());
  current = null;
}

function route() {
  if (!session.secret) return signInView();
  if (!session.account) return checkSession();
  leaveView();
  showAlert('');
  const hash = location.hash || '#/runs';
  const ctx = { signal: null, cleanups: [], onLeave: (fn) => ctx.cleanups.push(fn) };
  const controller = new AbortController();
  ctx.signal = controller.signal;
  current = { controller, cleanups: ctx.cleanups };
  let match;
  let view = 'runs';
  main.replaceChildren();
  if ((match = /^#\/runs\/([^?]+)/.exec(hash))) {
    runView(ctx, decodeURIComponent(match[1]));
  } else if (hash.startsWith('#/agents')) {
    view = 'agents';
    agentsView(ctx);
  } else if (hash.startsWith('#/new')) {
    view = 'new';
    newRunView(ctx);
  } else {
    runsView(ctx, new URLSearchParams(hash.split('?')[1] || ''));
  }
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.view === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/** Puts a view's heading in `main`, titles the page, and moves focus there after navigation. */
function heading(text, ...after) {
  const title = h('h1', { tabindex: -1 }, text);
  document.title = `${text} · toolsmith console`;
  main.append(h('div', { class: 'view-head' }, title, ...after));
  title.focus({ preventScroll: true });
  return title;
}

function chrome(signedIn) {
  $('nav').hidden = !signedIn;
  $('who').hidden = !signedIn;
  $('account-name').textContent = session.account || '';
}

async function checkSession() {
  try {
    const data = await api('/session');
    session.account = data.account;
    chrome(true);
    route();
  } catch (error) {
    if (error.status !== 401) {
      chrome(false);
      main.replaceChildren(h('p', {}, 'The console cannot reach the service. '),
        h('button', { type: 'button', class: 'btn', onclick: checkSession }, 'Try again'));
      failed(error);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Sign-in

function signInView(message) {
  chrome(false);
  showAlert(message || '');
  document.title = 'Sign in · toolsmith console';
  const input = h('input', { id: 'secret', type: 'password', name: 'secret', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'secret-hint' });
  const button = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Sign in');
  const form = h('form', { class: 'card signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('label', { for: 'secret' }, 'Account secret'),
    input,
    h('p', { id: 'secret-hint', class: 'hint' }, 'The secret starts with ts_. It is kept in this tab only, until you sign out or close the tab.'),
    h('div', { class: 'actions' }, button));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const secret = input.value.trim();
    if (!secret) return input.focus();
    button.disabled = true;
    session.secret = secret;
    try {
      const data = await api('/session');
      sessionStorage.setItem(SECRET_KEY, secret);
      session.account = data.account;
      chrome(true);
      showAlert('');
      if (!location.hash || location.hash === '#main') location.hash = '#/runs';
      route();
    } catch (error) {
      // api() already brought a 401 back here, with its message.
      if (error.status !== 401) failed(error);
      session.secret = null;
      button.disabled = false;
    }
  });
  main.replaceChildren(form);
  input.focus();
}

// ---------------------------------------------------------------------------------------------
// Runs

const REFRESH_MS = 4000;

async function runsView(ctx, query) {
  heading('Runs');
  const status = h('select', { id: 'f-status' },
    [['', 'All'], ['running', 'Running'], ['paused', 'Paused'], ['idle', 'Finished'], ['failed', 'Failed']]
      .map(([value, text]) => h('option', { value, selected: query.get('status') === value }, text)));
  const wanted = query.get('agent');
  const agent = h('select', { id: 'f-agent' }, h('option', { value: '' }, 'All agents'),
    wanted ? h('option', { value: wanted, selected: true }, wanted) : null);
  const refreshed = h('span', { class: 'muted small', 'aria-live': 'off' });
  const body = h('tbody');
  const table = h('table', { class: 'runs' },
    h('caption', { class: 'sr-only' }, 'Runs, most recently updated first'),
    h('thead', {}, h('tr', {}, ['Conversation', 'Status', 'Agent', 'Messages', 'Updated', 'Started'].map((c) => h('th', { scope: 'col', class: c === 'Messages' ? 'num' : null }, c)))),
    body);
  const empty = h('p', { class: 'empty', hidden: true }, 'No runs match. ', h('a', { href: '#/new' }, 'Start a run'), '.');
  main.append(
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter runs', onsubmit: (e) => e.preventDefault() },
      h('label', { for: 'f-status' }, 'Status'), status,
      h('label', { for: 'f-agent' }, 'Agent'), agent,
      h('button', { type: 'button', class: 'btn', onclick: () => load() }, 'Refresh'),
      refreshed),
    h('div', { class: 'table-wrap' }, table), empty);

  const load = async () => {
    const params = new URLSearchParams();
    if (status.value) params.set('status', status.value);
    if (agent.value) params.set('agentId', agent.value);
    try {
      const data = await api(`/runs?${params}`, { signal: ctx.signal });
      body.replaceChildren(...data.runs.map(runRow));
      empty.hidden = data.runs.length > 0;
      table.hidden = data.runs.length === 0;
      refreshed.textContent = `Updated ${absolute(Date.now()).slice(11)}`;
    } catch (error) {
      failed(error, ctx);
    }
  };
  const filtered = () => {
    const params = new URLSearchParams();
    if (status.value) params.set('status', status.value);
    if (agent.value) params.set('agent', agent.value);
    history.replaceState(null, '', `#/runs${params.size ? `?${params}` : ''}`);
    load();
  };
  status.addEventListener('change', filtered);
  agent.addEventListener('change', filtered);

  api('/agents', { signal: ctx.signal }).then((data) => {
    for (const a of data.agents) if (a.agentId !== wanted) agent.append(h('option', { value: a.agentId }, a.agentId));
  }).catch((error) => failed(error, ctx));
  await load();
  const timer = setInterval(() => document.hidden || load(), REFRESH_MS);
  ctx.onLeave(() => clearInterval(timer));
}

function runRow(run) {
  const href = `#/runs/${encodeURIComponent(run.threadId)}`;
  return h('tr', {},
    h('th', { scope: 'row' }, h('a', { href, class: 'run-link' }, run.conversationKey || run.threadId),
      run.live ? h('span', { class: 'live-dot', title: 'Running in this service now' }, 'live') : null),
    h('td', {}, badge(run.status), run.pending ? h('span', { class: 'pending-count' }, `${run.pending} waiting`) : null),
    h('td', {}, run.agentId),
    h('td', { class: 'num' }, run.messageCount),
    h('td', {}, when(run.updatedAt)),
    h('td', {}, when(run.createdAt)));
}

// ---------------------------------------------------------------------------------------------
// One run

function runView(ctx, threadId) {
  const path = `/runs/${encodeURIComponent(threadId)}`;
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/runs' }, '← All runs')));
  const title = heading('Run');
  const status = h('p', { class: 'stream-status', 'aria-live': 'polite', id: 'stream-status' });
  const head = h('div', { class: 'run-head' });
  const pendingSlot = h('div');
  const asyncSlot = h('div');
  const panels = h('div', { class: 'panels' }, pendingSlot, asyncSlot);
  let shownPending = null;
  const transcript = h('ol', { class: 'transcript', 'aria-label': 'Transcript' });
  const extra = h('div');
  const root = h('div', { class: 'run', id: 'run', dataset: { liveParts: 0 } },
    head, status, panels,
    h('section', { 'aria-labelledby': 'transcript-title' }, h('h2', { id: 'transcript-title' }, 'Transcript'), transcript),
    extra);
  main.append(root);

  let stream = null;
  let live = null; // the LiveView the stream draws in, last in the transcript
  let data = null;
  let poll = null;
  let lastEmptyEnd = 0;
  const newLiveView = () => {
    const view = new LiveView(h('li', { class: 'live', 'aria-label': 'Streaming now' }));
    transcript.append(view.el);
    return view;
  };
  const setStatus = (text, live) => {
    status.textContent = text;
    status.classList.toggle('is-live', !!live);
  };

  const load = async () => {
    try {
      data = await api(path, { signal: ctx.signal });
    } catch (error) {
      if (error.status === 404) {
        title.textContent = 'Run not found';
        setStatus('');
      }
      return failed(error, ctx);
    }
    render();
    // A stream that ended at once with nothing (the run ending as it was opened) is not opened
    // again at once.
    if (data.run.live && !stream) {
      if (Date.now() - lastEmptyEnd > 1000) watch();
      else poll = setTimeout(load, 1000);
      return;
    }
    // A run that the store says runs, but not here (another replica, or not started yet).
    clearTimeout(poll);
    if (!stream && data.run.status === 'running') poll = setTimeout(load, 2000);
  };

  const render = () => {
    const run = data.run;
    const asked = data.messages?.find((m) => m.role === 'user')?.content?.find((p) => p.type === 'text')?.text;
    title.textContent = asked ? `${run.agentId}: ${clip(asked, 80)}` : `Run of ${run.agentId}`;
    document.title = `${title.textContent} · toolsmith console`;
    fill(head, h('div', { class: 'run-facts' }, facts([
      ['Status', badge(run.status)],
      ['Agent', run.agentId],
      ['Messages', String(run.messageCount)],
      ['Tokens', tokens(data.usage).replace(/ tokens$/, '') || '—'],
      ['Started', when(run.createdAt)],
      ['Updated', when(run.updatedAt)],
      ['Parent run', run.parentId ? h('a', { href: `#/runs/${encodeURIComponent(run.parentId)}` }, 'open') : null],
    ]), h('p', { class: 'ids' }, 'Conversation ', h('code', {}, run.conversationKey), ' · Thread ', h('code', {}, run.threadId))));
    // The approvals are drawn again only when they change: a reason or edited arguments being
    // typed survive the run being read again.
    const pendingKey = JSON.stringify(data.pending || []);
    if (pendingKey !== shownPending) {
      shownPending = pendingKey;
      fill(pendingSlot, pendingPanel(data.pending || [], approve));
    }
    fill(asyncSlot, asyncPanel(data.asyncTools || []));
    const rendered = renderTranscript(data.messages || [], { children: data.children || [] });
    transcript.replaceChildren(...rendered.items);
    if (stream) transcript.append(live.el);
    fill(extra, childrenPanel(rendered.unmatched), journalPanel(data.journal || []));
    if (!stream) setStatus(STATUS_TEXT[run.live ? 'live' : run.status] || '');
  };

  const watch = () => {
    stream?.stop();
    clearTimeout(poll);
    live = newLiveView();
    setStatus('Streaming…', true);
    let started = null;
    stream = new LiveStream(`/console/api${path}/live`, ctx.signal, {
      parts(parts) {
        started ??= performance.now();
        for (const part of parts) live.apply(part);
        root.dataset.liveParts = Number(root.dataset.liveParts) + parts.length;
        root.dataset.liveMs = Math.round(performance.now() - started);
      },
      lagged() {
        // What was missed is in the stored thread: it is read again, and the stream goes on
        // from the newest parts in a fresh view.
        setStatus('Fell behind the run; reading its stored state…', true);
        live.el.remove();
        live = newLiveView();
        load();
      },
      end(error) {
        // The live view stays until the stored state, read again, replaces it.
        stream = null;
        if (started === null) lastEmptyEnd = Date.now();
        if (error) failed(error, ctx);
        setStatus('Stream ended; reading the run’s stored state…');
        load();
      },
    });
  };

  async function approve(answer, controls) {
    controls.forEach((c) => { c.disabled = true; });
    try {
      await api(`${path}/approvals`, { method: 'POST', body: { approvals: [answer] }, signal: ctx.signal });
      setStatus(answer.approved ? 'Approved: the run goes on.' : 'Denied: the run goes on.', true);
      pendingSlot.replaceChildren();
      shownPending = null;
      title.focus();
      watch();
    } catch (error) {
      controls.forEach((c) => { c.disabled = false; });
      failed(error, ctx);
      if (error.status === 409) load();
    }
  }

  ctx.onLeave(() => {
    stream?.stop();
    clearTimeout(poll);
  });
  if (watchNext === threadId) {
    watchNext = null;
    watch();
  }
  load();
}

function pendingPanel(pending, approve) {
  if (!pending.length) return null;
  const waiting = { 'client-tool': 'the client to run this tool', external: 'an external worker', nested: 'a sub-agent' };
  return h('section', { class: 'pending card', 'aria-labelledby': 'pending-title' },
    h('h2', { id: 'pending-title' }, 'Waiting for approval'),
    pending.map((p, i) => {
      const where = p.path?.length ? h('span', { class: 'muted' }, ` in sub-agent call ${p.path.join(' › ')}`) : null;
      const headline = h('h3', { id: `pause-${i}` }, h('code', {}, p.toolName), h('span', { class: 'muted small' }, ` ${p.toolCallId}`), where);
      if (p.kind !== 'approval' || !p.approvalId) {
        return h('div', { class: 'pause' }, headline, h('p', {}, `Waiting for ${waiting[p.kind] || p.kind}.`), pre(p.input));
      }
      return approvalForm(p, i, headline, approve);
    }));
}

function approvalForm(p, i, headline, approve) {
  const original = pretty(p.input);
  const reason = h('input', { id: `reason-${i}`, type: 'text', autocomplete: 'off', placeholder: 'Told to the model when denied' });
  const problem = h('p', { id: `args-problem-${i}`, class: 'field-error', 'aria-live': 'polite' });
  const edit = p.editable
    ? h('textarea', { id: `args-${i}`, rows: Math.min(12, original.split('\n').length + 1), spellcheck: 'false', 'aria-describedby': `args-problem-${i}`, class: 'code' }, original)
    : null;
  const parsed = () => {
    if (!edit || edit.value === original) return { ok: true };
    try {
      return { ok: true, input: JSON.parse(edit.value) };
    } catch (error) {
      return { ok: false, message: `The arguments are not valid JSON: ${error.message}` };
    }
  };
  edit?.addEventListener('input', () => {
    const result = parsed();
    problem.textContent = result.ok ? '' : result.message;
    edit.setAttribute('aria-invalid', String(!result.ok));
  });
  const yes = h('button', { type: 'button', class: 'btn btn-primary', 'data-action': 'approve' }, 'Approve');
  const no = h('button', { type: 'button', class: 'btn btn-danger', 'data-action': 'deny' }, 'Deny');
  const answer = (approved) => {
    const answer = { approvalId: p.approvalId, approved };
    if (reason.value.trim()) answer.reason = reason.value.trim();
    if (approved) {
      const result = parsed();
      if (!result.ok) {
        problem.textContent = result.message;
        return edit.focus();
      }
      if (result.input !== undefined) answer.input = result.input;
    }
    approve(answer, [yes, no]);
  };
  yes.addEventListener('click', () => answer(true));
  no.addEventListener('click', () => answer(false));
  return h('form', { class: 'pause approval', 'aria-labelledby': `pause-${i}`, onsubmit: (e) => e.preventDefault() },
    headline,
    edit ? [h('label', { for: `args-${i}` }, 'Edit arguments (JSON)'), edit, problem] : [h('p', { class: 'label' }, 'Arguments'), pre(p.input)],
    h('label', { for: `reason-${i}` }, 'Reason (optional)'), reason,
    h('div', { class: 'actions' }, yes, no));
}

function asyncPanel(calls) {
  if (!calls.length) return null;
  return h('section', { class: 'card', 'aria-labelledby': 'async-title' },
    h('h2', { id: 'async-title' }, 'Async tool calls'),
    h('table', {}, h('thead', {}, h('tr', {}, ['Tool', 'Call', 'Status', 'Worker', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, calls.map((c) => h('tr', {},
        h('td', {}, h('code', {}, c.toolName)), h('td', { class: 'muted' }, c.toolCallId),
        h('td', {}, badge(c.status === 'processing' ? 'running' : c.status === 'completed' ? 'idle' : 'failed', c.status)),
        h('td', {}, c.external ? 'external' : 'in-process'), h('td', {}, when(c.updatedAt)))))));
}

function childrenPanel(children) {
  if (!children.length) return null;
  return h('section', { 'aria-labelledby': 'children-title' },
    h('h2', { id: 'children-title' }, 'Sub-agent runs'),
    h('ul', { class: 'children' }, children.map((c) => h('li', {},
      h('a', { href: `#/runs/${encodeURIComponent(c.threadId)}` }, childName(c)), ' ', badge(c.status),
      h('span', { class: 'muted small' }, ` ${c.messageCount} messages`)))));
}

const childName = (c) => (c.tags || []).find((t) => t.startsWith('name:'))?.slice(5) || c.threadId;

function journalPanel(journal) {
  if (!journal.length) return null;
  return h('section', { 'aria-labelledby': 'journal-title' },
    h('h2', { id: 'journal-title' }, 'Journal'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'journal' },
      h('thead', {}, h('tr', {}, ['Seq', 'Tool', 'Call', 'Status', 'Attempt', 'Side effect', 'Output'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, journal.map((j) => h('tr', {},
        h('td', {}, j.seq), h('td', {}, h('code', {}, j.toolName)), h('td', { class: 'muted' }, j.toolCallId),
        h('td', {}, h('span', { class: `badge badge-effect-${j.status}` }, j.status)), h('td', {}, j.attempt),
        h('td', {}, j.sideEffect ? (j.idempotent ? 'yes, idempotent' : 'yes') : 'no'),
        h('td', {}, j.output === undefined ? '—' : h('details', {}, h('summary', {}, 'Show'), pre(j.output)))))))));
}

// ---------------------------------------------------------------------------------------------
// Agents

async function agentsView(ctx) {
  heading('Agents', h('a', { href: '#/new', class: 'btn' }, 'Start a run'));
  try {
    const data = await api('/agents', { signal: ctx.signal });
    if (!data.agents.length) main.append(h('p', { class: 'empty' }, 'This account has no agents yet.'));
    main.append(h('ul', { class: 'agents' }, data.agents.map(agentCard)));
  } catch (error) {
    failed(error, ctx);
  }
}

function agentCard(agent) {
  const id = `agent-${agent.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return h('li', { class: 'card agent', 'aria-labelledby': id },
    h('div', { class: 'agent-head' },
      h('h2', { id }, agent.agentId),
      agent.active ? badge('active', 'active') : badge('inactive', 'inactive'),
      h('a', { href: '#/new', class: 'small', onclick: () => { newRunAgent = agent.agentId; } }, 'Start a run')),
    facts([['Model', agent.model ? h('code', {}, agent.model) : '—'], ['Updated', when(agent.updatedAt)]]),
    agent.error ? h('p', { class: 'error-text' }, `The config does not build: ${agent.error}`) : null,
    h('h3', {}, `Tools (${agent.tools.length})`),
    agent.tools.length
      ? h('ul', { class: 'tools' }, agent.tools.map((t) => h('li', {},
        h('code', { class: 'tool-name' }, t.name), h('span', { class: 'tool-desc' }, t.description || ''),
        h('details', {}, h('summary', {}, 'Input schema'), pre(t.inputSchema)))))
      : h('p', { class: 'muted' }, 'No tools.'),
    h('details', { class: 'config' }, h('summary', {}, 'Config (secrets redacted)'), pre(agent.config)));
}

// ---------------------------------------------------------------------------------------------
// Start a run

let newRunAgent = null;

async function newRunView(ctx) {
  heading('Start a run');
  const agent = h('select', { id: 'n-agent', required: true });
  const message = h('textarea', { id: 'n-message', rows: 5, required: true, placeholder: 'What should the agent do?' });
  const key = h('input', { id: 'n-key', type: 'text', autocomplete: 'off', 'aria-describedby': 'n-key-hint' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Start run');
  const form = h('form', { class: 'card start', 'aria-label': 'Start a run' },
    h('label', { for: 'n-agent' }, 'Agent'), agent,
    h('label', { for: 'n-message' }, 'Message'), message,
    h('label', { for: 'n-key' }, 'Conversation key (optional)'), key,
    h('p', { id: 'n-key-hint', class: 'hint' }, 'Leave it empty for a new conversation; give an existing one’s key to go on with it.'),
    h('div', { class: 'actions' }, submit));
  main.append(form);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!message.value.trim()) return message.focus();
    submit.disabled = true;
    const body = { agentId: agent.value, message: message.value };
    if (key.value.trim()) body.conversationKey = key.value.trim();
    try {
      const started = await api('/runs', { method: 'POST', body, signal: ctx.signal });
      watchNext = started.threadId;
      location.hash = `#/runs/${encodeURIComponent(started.threadId)}`;
    } catch (error) {
      submit.disabled = false;
      failed(error, ctx);
    }
  });
  try {
    const data = await api('/agents', { signal: ctx.signal });
    const usable = data.agents.filter((a) => a.active && !a.error);
    agent.append(...usable.map((a) => h('option', { value: a.agentId, selected: a.agentId === newRunAgent }, a.model ? `${a.agentId} (${a.model})` : a.agentId)));
    newRunAgent = null;
    if (!usable.length) {
      submit.disabled = true;
      form.prepend(h('p', { class: 'empty' }, 'No active agent can run. ', h('a', { href: '#/agents' }, 'See the agents'), '.'));
    }
  } catch (error) {
    failed(error, ctx);
  }
}

// ---------------------------------------------------------------------------------------------
// Transcript: stored messages, as steps with their text, reasoning and tool calls

/** A tool call's card; its result, error or denial is filled in when it comes. */
class ToolCard {
  constructor(toolName, toolCallId) {
    this.state = h('span', { class: 'badge badge-running' }, 'called');
    this.time = h('span', { class: 'muted small' });
    // Arguments, shown once known (a card can be drawn first from a sub-agent's part).
    this.args = h('pre', { class: 'json', tabindex: 0 });
    this.argsBox = h('div', { hidden: true }, h('div', { class: 'label' }, 'Arguments'), this.args);
    this.out = h('div', { class: 'tool-out' });
    this.nested = null;
    this.el = h('div', { class: 'tool', dataset: { tool: toolName, call: toolCallId } },
      h('div', { class: 'tool-head' }, h('span', { class: 'kind' }, 'Tool'), h('code', { class: 'tool-name' }, toolName),
        h('span', { class: 'muted small' }, toolCallId), this.state, this.time),
      this.argsBox, this.out);
  }

  setState(word, status) {
    this.settled = ['done', 'error', 'denied'].includes(word);
    this.state.textContent = word;
    this.state.className = `badge badge-${status}`;
    this.el.dataset.state = word;
  }

  input(value) {
    this.args.textContent = pretty(value);
    this.argsBox.hidden = false;
  }

  inputDelta(text) {
    this.args.append(text);
    this.argsBox.hidden = false;
  }

  approved() {
    if (!this.settled) this.setState('approved', 'running');
    this.state.after(h('span', { class: 'approved-mark' }, 'approved by a reviewer'));
  }

  /** A stored result (`ModelOutput`: text, json, content, error-*, execution-denied). */
  output(output) {
    const type = output?.type;
    if (type === 'execution-denied') return this.denied(output.reason);
    if (type === 'error-text' || type === 'error-json') return this.error(pretty(output.value));
    this.setState('done', 'idle');
    let body;
    if (type === 'text') body = h('pre', { class: 'result-text', tabindex: 0 }, output.value);
    else if (type === 'content') body = h('div', {}, (output.value || []).map(contentPart));
    else body = pre(type === 'json' ? output.value : output);
    this.out.replaceChildren(h('div', { class: 'label' }, 'Result'), body);
  }

  result(value) {
    this.setState('done', 'idle');
    this.out.replaceChildren(h('div', { class: 'label' }, 'Result'), pre(value));
  }

  error(message) {
    this.setState('error', 'failed');
    this.out.replaceChildren(h('div', { class: 'label' }, 'Error'), h('pre', { class: 'error-text', tabindex: 0 }, message));
  }

  denied(reason) {
    this.setState('denied', 'failed');
    this.out.replaceChildren(h('p', { class: 'denied' }, reason ? `Denied: ${reason}` : 'Denied.'));
  }

  /** The box a sub-agent's run is drawn in, under the call. */
  nest(label) {
    if (!this.nested) {
      this.nested = h('div', { class: 'nested', role: 'group', 'aria-label': label }, h('div', { class: 'nested-label' }, label));
      this.el.append(this.nested);
    }
    return this.nested;
  }
}

function contentPart(part) {
  if (part.type === 'text') return h('pre', { class: 'result-text', tabindex: 0 }, part.text);
  if (part.type === 'image' && /^image\/(png|jpeg|gif|webp)$/.test(part.mediaType) && /^[A-Za-z0-9+/=\s]+$/.test(part.data)) {
    return h('img', { src: `data:${part.mediaType};base64,${part.data}`, alt: 'Image from the tool', class: 'result-img' });
  }
  return h('p', { class: 'muted' }, `${part.type}: ${part.filename || part.mediaType || ''}`);
}

/** A step's model call, finish reason, tokens and duration. */
function stepMeta(meta) {
  if (!meta) return null;
  const bits = [meta.model && (meta.provider ? `${meta.provider}:${meta.model}` : meta.model),
    meta.finishReason, tokens(meta.usage), duration(meta.durationMs)].filter(Boolean);
  return bits.length ? h('p', { class: 'step-meta' }, bits.join(' · ')) : null;
}

function textBlock(text, cls) {
  return h('div', { class: cls || 'text' }, text);
}

/**
 * The transcript's items (`<li>`s) for `messages`; `children` are the run's sub-agent threads,
 * shown in the call that made them where that can be told, the others returned as `unmatched`.
 */
function renderTranscript(messages, { children = [] } = {}) {
  const cards = new Map();
  const items = [];
  let step = 0;
  const card = (id, name) => {
    if (!cards.has(id)) cards.set(id, new ToolCard(name, id));
    return cards.get(id);
  };
  for (const message of messages) {
    const content = Array.isArray(message.content) ? message.content : [];
    if (message.role === 'tool') {
      for (const part of content) {
        if (part.type === 'tool-result') {
          const c = card(part.toolCallId, part.toolName);
          c.output(part.output);
          const ms = message.meta?.calls?.[part.toolCallId];
          if (typeof ms === 'number') c.time.textContent = duration(ms);
          if (!c.placed) items.push(h('li', { class: 'msg msg-tool' }, c.el)); // a result without its call
          c.placed = true;
        } else if (part.type === 'tool-approval-response') {
          const c = [...cards.values()].find((x) => x.approvalId === part.approvalId);
          if (c && !part.approved) c.denied(part.reason);
          else if (c) c.approved();
        }
      }
      continue;
    }
    const role = message.role === 'assistant' ? `Step ${++step}` : message.role === 'user' ? 'User' : 'System';
    const li = h('li', { class: `msg msg-${message.role}` }, h('div', { class: 'role' }, role));
    const body = message.role === 'system' ? h('details', {}, h('summary', {}, 'Instructions')) : li;
    if (body !== li) li.append(body);
    for (const part of content) {
      switch (part.type) {
        case 'text': body.append(textBlock(part.text)); break;
        case 'reasoning':
          body.append(h('details', { class: 'reasoning' }, h('summary', {}, 'Reasoning'), textBlock(part.text, 'text reasoning-text')));
          break;
        case 'tool-call': {
          const c = card(part.toolCallId, part.toolName);
          c.input(part.input);
          c.placed = true;
          body.append(c.el);
          break;
        }
        case 'tool-approval-request': {
          const c = card(part.toolCallId, part.toolName);
          c.approvalId = part.approvalId;
          c.setState('waiting for approval', 'paused');
          break;
        }
        case 'nested-run': {
          const c = card(part.toolCallId, part.toolName);
          const child = renderTranscript(part.messages || []);
          append(c.nest(`Sub-agent ${childName({ tags: part.tags, threadId: part.toolName })}`), h('ol', { class: 'transcript' }, child.items));
          c.setState('sub-agent paused', 'paused');
          break;
        }
        case 'file': body.append(h('p', { class: 'muted' }, `File: ${part.filename || part.mediaType}`)); break;
        case 'source': body.append(h('p', { class: 'muted small' }, `Source: ${part.title || ''} ${part.url || part.id}`)); break;
        default: body.append(h('p', { class: 'muted small' }, `(${part.type})`));
      }
    }
    if (message.role === 'assistant') append(li, [stepMeta(message.meta)]);
    items.push(li);
  }
  // Sub-agent threads: in the call whose id their thread id ends with, else listed apart.
  const unmatched = [];
  for (const child of children) {
    const c = [...cards.values()].find((x) => child.threadId.endsWith(x.el.dataset.call));
    if (!c) {
      unmatched.push(child);
      continue;
    }
    const link = h('a', { href: `#/runs/${encodeURIComponent(child.threadId)}` }, `Sub-agent run ${childName(child)}`);
    append(c.nest(`Sub-agent ${childName(child)}`), h('p', { class: 'small' }, link, ' ', badge(child.status), ` · ${child.messageCount} messages`));
  }
  return { items, unmatched };
}

// ---------------------------------------------------------------------------------------------
// Live stream: run parts over fetch (an EventSource cannot send the bearer), drawn once per
// animation frame, text appended to text nodes

class LiveStream {
  constructor(url, signal, handlers) {
    this.handlers = handlers;
    this.queue = [];
    this.frame = 0;
    this.controller = new AbortController();
    signal.addEventListener('abort', () => this.stop());
    this.read(url).then(() => this.finish(), (error) => this.finish(error));
  }

  stop() {
    this.stopped = true;
    this.controller.abort();
    cancelAnimationFrame(this.frame);
  }

  async read(url) {
    const response = await fetch(url, {
      headers: { Authorization: `Bearer ${session.secret}`, Accept: 'text/event-stream' },
      signal: this.controller.signal, cache: 'no-store',
    });
    if (response.status === 401) {
      this.stop();
      return signOut('The secret was not accepted.');
    }
    if (!response.ok) {
      let text = `${response.status} ${response.statusText}`;
      try { text = (await response.json()).error || text; } catch { /* not JSON */ }
      throw new ApiError(response.status, text);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        if (!data) continue; // a keep-alive comment
        const part = JSON.parse(data);
        if (part.type === 'console-idle') return;
        if (part.type === 'console-lagged') {
          this.flush();
          this.handlers.lagged();
          continue;
        }
        this.queue.push(part);
        if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
      }
    }
  }

  flush() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (!this.queue.length || this.stopped) return;
    const parts = this.queue;
    this.queue = [];
    this.handlers.parts(parts);
  }

  finish(error) {
    if (this.stopped) return;
    this.flush();
    this.stopped = true;
    this.handlers.end(error && error.name !== 'AbortError' ? error : null);
  }
}

/** Run parts drawn as they come: steps, text blocks by id, tool cards by call id, nested runs. */
class LiveView {
  constructor(el) {
    this.el = el;
    this.steps = 0;
    this.step = null;
    this.blocks = new Map();
    this.cards = new Map();
    this.children = new Map();
  }

  currentStep() {
    if (!this.step) this.startStep();
    return this.step;
  }

  startStep() {
    this.step = h('div', { class: 'msg msg-assistant' }, h('div', { class: 'role' }, `Streaming step ${++this.steps}`));
    this.el.append(this.step);
  }

  block(id, reasoning) {
    const key = `${reasoning ? 'r' : 't'}:${id}`;
    let node = this.blocks.get(key);
    if (!node) {
      node = document.createTextNode('');
      const text = textBlock(node, reasoning ? 'text reasoning-text' : 'text');
      this.currentStep().append(reasoning ? h('details', { class: 'reasoning', open: true }, h('summary', {}, 'Reasoning'), text) : text);
      this.blocks.set(key, node);
    }
    return node;
  }

  card(id, name) {
    let c = this.cards.get(id);
    if (!c) {
      c = new ToolCard(name || 'tool', id);
      this.currentStep().append(c.el);
      this.cards.set(id, c);
    }
    return c;
  }

  apply(part) {
    switch (part.type) {
      case 'start-step': this.startStep(); break;
      case 'text-start': this.block(part.id); break;
      case 'text-delta': this.block(part.id).appendData(part.text); break;
      case 'reasoning-start': this.block(part.id, true); break;
      case 'reasoning-delta': this.block(part.id, true).appendData(part.text); break;
      case 'tool-input-start': this.card(part.id, part.toolName).setState('preparing', 'running'); break;
      case 'tool-input-delta': this.card(part.id).inputDelta(part.delta); break;
      case 'tool-call': {
        const c = this.card(part.toolCallId, part.toolName);
        c.input(part.input);
        c.setState('running', 'running');
        break;
      }
      case 'tool-result': this.card(part.toolCallId, part.toolName).result(part.output); break;
      case 'tool-error': this.card(part.toolCallId, part.toolName).error(part.error?.message || pretty(part.error)); break;
      case 'tool-output-denied': this.card(part.toolCallId, part.toolName).denied(part.reason); break;
      case 'tool-approval-request': this.card(part.toolCallId, part.toolName).setState('waiting for approval', 'paused'); break;
      case 'finish-step': append(this.currentStep(), stepMeta({ finishReason: part.finishReason, usage: part.usage })); this.step = null; break;
      case 'finish': this.el.append(h('p', { class: 'step-meta' }, ['Finished', part.finishReason, tokens(part.usage || part.totalUsage)].filter(Boolean).join(' · '))); break;
      case 'abort': this.el.append(h('p', { class: 'error-text' }, `Cancelled${part.reason ? `: ${part.reason}` : '.'}`)); break;
      case 'error': this.el.append(h('p', { class: 'error-text' }, `Error: ${part.error?.message || pretty(part.error)}`)); break;
      case 'warning': this.currentStep().append(h('p', { class: 'muted small' }, `Warning: ${part.message}`)); break;
      case 'data': this.currentStep().append(h('details', { class: 'data' }, h('summary', {}, `Data: ${part.name}`), pre(part.data))); break;
      case 'nested': this.nested(part.path || [], part.part); break;
      default: break; // start, text-end, tool-input-end, source, file: nothing to draw
    }
  }

  nested(path, part) {
    if (!path.length) return this.apply(part);
    const [hop, ...rest] = path;
    let child = this.children.get(hop.toolCallId);
    if (!child) {
      const c = this.card(hop.toolCallId, hop.toolName);
      child = new LiveView(c.nest(`Sub-agent ${hop.toolName}`));
      this.children.set(hop.toolCallId, child);
    }
    child.nested(rest, part);
  }
}

// ---------------------------------------------------------------------------------------------
// Start

$('sign-out').addEventListener('click', () => signOut());
$('skip').addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', route);
route();
