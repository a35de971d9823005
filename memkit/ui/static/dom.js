// Building the page: every string lands as a text node or an attribute value, never as HTML.

const SVG = 'http://www.w3.org/2000/svg';

function build(el, props, children) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.setAttribute('class', value);
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name === 'value' && 'value' in el) el.value = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h('a', {href: '#/x', onclick}, 'text', otherNode). */
export function h(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

/** An SVG element. */
export function s(tag, props, ...children) {
  return build(document.createElementNS(SVG, tag), props, children);
}

/** Append children to `el` as h() does: strings as text, null/false/undefined skipped. */
export function append(el, ...children) {
  return build(el, {}, children);
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export function fmtDate(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace('T', ' ').slice(0, 16);
}

/** The start of a long text for a list (the memory's own page shows all of it): one memory
 *  of 100,000 characters would otherwise make its row taller than everything else. */
export function excerpt(text, max = 400) {
  if (!text || text.length <= max) return text ?? '';
  const cut = text.slice(0, max - 1);
  return `${/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

export function fmtNum(x, digits = 2) {
  return x === null || x === undefined ? '' : Number(x).toFixed(digits);
}

const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

/** `text` for a label it shares with other words: with a bidi control in it (an unclosed
 *  right-to-left override turns the rest of the line around), isolated between U+2068 and
 *  U+2069, which end whatever it opened (its own isolate marks dropped, so none ends ours). */
export function isolated(text) {
  if (!BIDI_CONTROL.test(text)) return text;
  return `\u2068${text.replace(/[\u2066-\u2069]/g, '')}\u2069`;
}

export function scopeLabel(scope) {
  const parts = [];
  if (scope.user_id) parts.push(`user ${isolated(scope.user_id)}`);
  if (scope.agent_id) parts.push(`agent ${isolated(scope.agent_id)}`);
  if (scope.run_id) parts.push(`run ${isolated(scope.run_id)}`);
  return parts.join(' · ') || 'no scope';
}

/** Whether a change event belongs to `scope` (every field the scope sets matches). */
export function inScope(scope, event) {
  return Object.entries(scope || {}).every(([name, value]) => event.data[name] === value);
}

/** A button that asks for a second click before it acts; `warning`, if given, is said
 *  beside it while it waits (what the action removes). */
export function confirmButton(label, confirmLabel, action, props = {}, warning = null) {
  let armed = false;
  const button = h('button', {type: 'button', ...props}, label);
  const said = warning ? h('p', {class: 'warning', role: 'alert'}, warning) : null;
  button.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      button.classList.add('armed');
      if (said) button.after(said);
      return;
    }
    button.disabled = true;
    try { await action(); } finally { button.disabled = false; }
  });
  button.addEventListener('blur', () => {
    armed = false;
    button.textContent = label;
    button.classList.remove('armed');
    said?.remove();
  });
  return button;
}

/** Word-level differences of two texts: [{op: 'same'|'add'|'del', text}]. */
export function diffWords(before, after) {
  const a = (before || '').split(/(\s+)/).filter(Boolean);
  const b = (after || '').split(/(\s+)/).filter(Boolean);
  if (a.length * b.length > 250000) return [{op: 'del', text: before}, {op: 'add', text: after}];
  const table = Array.from({length: a.length + 1}, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  const push = (op, text) => {
    const last = out[out.length - 1];
    if (last && last.op === op) last.text += text; else out.push({op, text});
  };
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { push('same', a[i]); i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) push('del', a[i++]);
    else push('add', b[j++]);
  }
  while (i < a.length) push('del', a[i++]);
  while (j < b.length) push('add', b[j++]);
  return out;
}

export function diffView(before, after) {
  return h('p', {class: 'diff'}, diffWords(before, after).map(part =>
    part.op === 'same' ? part.text : h(part.op === 'add' ? 'ins' : 'del', {}, part.text)));
}
