// The console's DOM helpers and formatting. Everything the API returns is hostile: it reaches
// the page only through these helpers, as text nodes, never as HTML.

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** An element: `h('a', {href, class, onclick}, 'text', child, [more])`. */
export function h(tag, props, ...children) {
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

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces `el`'s children, skipping empty ones (`replaceChildren(null)` would write "null"). */
export const fill = (el, ...children) => {
  el.replaceChildren();
  return append(el, children);
};

export const $ = (id) => document.getElementById(id);
export const pre = (value, cls) => h('pre', { class: cls || 'json', tabindex: 0 }, pretty(value));

/** A definition list from [term, value] pairs, skipping empty values. */
export function facts(pairs, cls) {
  const dl = h('dl', { class: cls || 'facts' });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === '') continue;
    dl.append(h('div', {}, h('dt', {}, term), h('dd', {}, value)));
  }
  return dl;
}

// ---------------------------------------------------------------------------------------------
// Formatting

export const STATUS_WORDS = { idle: 'finished', running: 'running', paused: 'paused', failed: 'failed' };
export const STATUS_TEXT = {
  live: 'Running in this service.',
  running: 'Running, but not in this service process: this page reads it again every few seconds.',
  paused: 'Paused: the run waits for the answers below.',
  idle: 'The run is finished.',
  failed: 'The run failed.',
};

export function badge(status, word) {
  return h('span', { class: `badge badge-${status}` }, word || STATUS_WORDS[status] || status);
}

export function pretty(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export const pad = (n) => String(n).padStart(2, '0');

export function absolute(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A `<time>`: "12 s ago", "5 min ago", "3 h ago", else the date; the full time as its title. */
export function when(ms) {
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

export function duration(ms) {
  if (typeof ms !== 'number') return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export const num = (n) => Number(n).toLocaleString('en-US');
export const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1).trimEnd()}…` : text).replace(/\s+/g, ' ');

/** Token usage (`{input: {total, cache_read…}, output: {total, reasoning…}}`) in words. */
export function tokens(usage) {
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
