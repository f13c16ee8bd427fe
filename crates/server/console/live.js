// A run's parts as they happen, drawn into its transcript.

import { h, append, pre, pretty, tokens } from './dom.js';
import { session, ApiError, signOut } from './api.js';
import { ToolCard, stepMeta, textBlock } from './transcript.js';

// ---------------------------------------------------------------------------------------------
// Live stream: run parts over fetch (an EventSource cannot send the bearer), drawn once per
// animation frame, text appended to text nodes

export class LiveStream {
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
export class LiveView {
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
