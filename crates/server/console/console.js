// toolsmith console: one account's agents and runs, in the browser, served by `toolsmith serve`
// at /console. No build step, no dependencies. Everything the API returns (model output, tool
// arguments and results) is hostile: it reaches the page only as text nodes, never as HTML.
//
// Modules: dom.js (DOM helpers, formatting) · api.js (API calls, session) · this one (router,
// views: sign-in, runs, run, agents, start a run) · transcript.js (stored messages) · live.js
// (a run's parts as they happen).

import { h, fill, $, pre, facts, STATUS_TEXT, badge, pretty, absolute, when, clip, tokens } from './dom.js';
import { SECRET_KEY, session, api, showAlert, failed, signOut, onSignOut } from './api.js';
import { LiveStream, LiveView } from './live.js';
import { renderTranscript } from './transcript.js';

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
    transcript.replaceChildren(...renderTranscript(data.messages || []));
    if (stream) transcript.append(live.el);
    fill(extra, journalPanel(data.journal || []));
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
// Start

onSignOut((message) => {
  leaveView();
  signInView(message);
});
$('sign-out').addEventListener('click', () => signOut());
$('skip').addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', route);
route();
