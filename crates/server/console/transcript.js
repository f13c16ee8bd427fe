// A run's stored messages drawn as steps: text, reasoning, tool calls with their arguments and
// results, sub-agents nested.

import { h, append, pre, badge, pretty, when, duration, tokens } from './dom.js';

// ---------------------------------------------------------------------------------------------
// Transcript: stored messages, as steps with their text, reasoning and tool calls

/** A tool call's card; its result, error or denial is filled in when it comes. */
export class ToolCard {
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

export function contentPart(part) {
  if (part.type === 'text') return h('pre', { class: 'result-text', tabindex: 0 }, part.text);
  if (part.type === 'image' && /^image\/(png|jpeg|gif|webp)$/.test(part.mediaType) && /^[A-Za-z0-9+/=\s]+$/.test(part.data)) {
    return h('img', { src: `data:${part.mediaType};base64,${part.data}`, alt: 'Image from the tool', class: 'result-img' });
  }
  return h('p', { class: 'muted' }, `${part.type}: ${part.filename || part.mediaType || ''}`);
}

/** A step's model call, finish reason, tokens and duration. */
export function stepMeta(meta) {
  if (!meta) return null;
  const bits = [meta.model && (meta.provider ? `${meta.provider}:${meta.model}` : meta.model),
    meta.finishReason, tokens(meta.usage), duration(meta.durationMs)].filter(Boolean);
  return bits.length ? h('p', { class: 'step-meta' }, bits.join(' · ')) : null;
}

export function textBlock(text, cls) {
  return h('div', { class: cls || 'text' }, text);
}

/** The transcript's items (`<li>`s) for `messages`. */
export function renderTranscript(messages) {
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
          append(c.nest(`Sub-agent ${part.toolName}`), h('ol', { class: 'transcript' }, renderTranscript(part.messages || [])));
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
  return items;
}
