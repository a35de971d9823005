// Memories of a scope: filters, pages, and search with its scores.

import {api} from '../api.js';
import {append, excerpt, fmtDate, fmtNum, h, inScope, scopeLabel} from '../dom.js';

const PAGE = 50;
const SEARCH_PAGE = 20;
const MODES = ['hybrid', 'vector', 'keyword'];

/** The form's field `name` (from the page's address) read by `parse`, which returns
 *  undefined for what it cannot read: then an error naming the field and its value. */
function param(params, name, what, parse) {
  const raw = params.get(name);
  const value = parse(raw);
  if (value === undefined) throw new Error(`${name} must be ${what}, got ${JSON.stringify(raw)}`);
  return value;
}

const number = raw => (raw.trim() && Number.isFinite(Number(raw)) ? Number(raw) : undefined);
const date = raw => { const d = new Date(raw); return Number.isNaN(d.getTime()) ? undefined : d.toISOString(); };

/** The filter of the form's fields (type, importance, time, metadata `key=value` lines).
 *  Built in a Map: a metadata key such as `__proto__` set on a plain object would change
 *  its prototype instead and never reach the API. */
export function filterOf(params) {
  const filter = new Map();
  if (params.get('type')) filter.set('memory_type', params.get('type'));
  if (params.get('min_importance')) {
    filter.set('importance', {gte: param(params, 'min_importance', 'a number', number)});
  }
  const created = {};
  if (params.get('after')) created.gte = param(params, 'after', 'a date (YYYY-MM-DD)', date);
  if (params.get('before')) created.lt = param(params, 'before', 'a date (YYYY-MM-DD)', date);
  if (Object.keys(created).length) filter.set('created_at', created);
  for (const line of (params.get('meta') || '').split('\n')) {
    const at = line.indexOf('=');
    if (at < 1) continue;
    const name = line.slice(0, at).trim(), raw = line.slice(at + 1).trim();
    let value = raw;
    try { value = JSON.parse(raw); } catch { /* a plain string */ }
    filter.set(name, value);
  }
  return filter.size ? Object.fromEntries(filter) : null;  // own properties, `__proto__` too
}

function field(label, input) {
  return h('label', {class: 'field'}, h('span', {}, label), input);
}

function form(ctx, params, types) {
  const q = h('input', {type: 'search', name: 'q', value: params.get('q') || '', placeholder: 'Search…',
                        'aria-label': 'Search'});
  const mode = h('select', {name: 'mode'}, MODES.map(m => h('option', {value: m}, m)));
  mode.value = params.get('mode') || 'hybrid';
  const type = h('input', {name: 'type', list: 'memory-types', value: params.get('type') || '',
                           placeholder: 'any', size: 10});
  const known = h('datalist', {id: 'memory-types'}, types.map(t => h('option', {value: t})));
  const importance = h('input', {type: 'number', name: 'min_importance', min: 0, max: 1, step: 0.1,
                                 value: params.get('min_importance') || ''});
  const after = h('input', {type: 'date', name: 'after', value: params.get('after') || ''});
  const before = h('input', {type: 'date', name: 'before', value: params.get('before') || ''});
  const meta = h('textarea', {name: 'meta', rows: 1, placeholder: 'key=value'});
  meta.value = params.get('meta') || '';
  const el = h('form', {class: 'filters', role: 'search'},
    h('div', {class: 'row'}, q, field('mode', mode), h('button', {type: 'submit'}, 'Go')),
    h('div', {class: 'row'}, field('type', type), known, field('importance ≥', importance),
      field('created after', after), field('created before', before), field('metadata', meta)));
  el.addEventListener('submit', event => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(el)) if (value) next.set(name, value);
    if (!next.get('q')) next.delete('mode');
    next.delete('offset');
    ctx.go(`#/memories?${next}`);
  });
  return el;
}

function row(item, extra) {
  return h('tr', {},
    h('td', {class: 'text'}, h('a', {href: `#/memory/${encodeURIComponent(item.id)}`}, excerpt(item.memory))),
    extra,
    h('td', {}, item.memory_type || ''),
    h('td', {class: 'num'}, fmtNum(item.importance)),
    h('td', {class: 'num'}, fmtNum(item.confidence)),
    h('td', {}, fmtDate(item.created_at)));
}

function table(head, rows) {
  return h('table', {class: 'list'}, h('thead', {}, h('tr', {}, head.map(c => h('th', {scope: 'col'}, c)))),
           h('tbody', {}, rows));
}

async function search(ctx, params, filters) {
  const mode = params.get('mode') || 'hybrid';
  const offset = Number(params.get('offset') || 0);
  const ask = (m, limit, from = 0) => api('POST', '/v1/memories/search/', {body: {
    query: params.get('q'), ...ctx.scopeQuery(), limit, offset: from, mode: m, filters}});
  // Which half matched: each half alone, deeper than the page, beside the hybrid ranking.
  const deeper = Math.min(1000, (offset + SEARCH_PAGE) * 5);
  const [found, ...halves] = await Promise.all(mode === 'hybrid'
    ? [ask(mode, SEARCH_PAGE, offset), ask('vector', deeper), ask('keyword', deeper).catch(() => null)]
    : [ask(mode, SEARCH_PAGE, offset), null, null]);
  const ranks = halves.map(half => half && new Map(half.results.map((m, i) => [m.id, [i + 1, m.score]])));
  const head = ['memory', 'score', ...(mode === 'hybrid' ? ['matched by'] : []),
                'type', 'importance', 'confidence', 'created'];
  const rows = found.results.map(item => {
    const matched = ['vector', 'keyword'].flatMap((name, i) => {
      const hit = ranks[i]?.get(item.id);
      return hit ? [h('span', {class: `badge ${name}`, title: `${name} rank ${hit[0]}, score ${fmtNum(hit[1], 3)}`},
                      `${name} ${fmtNum(hit[1])}`)] : [];
    });
    return row(item, [h('td', {class: 'num'}, fmtNum(item.score, 3)),
                      mode === 'hybrid' ? h('td', {class: 'matched'}, matched) : null]);
  });
  const at = n => { const p = new URLSearchParams(params); p.set('offset', String(n)); return `#/memories?${p}`; };
  return [table(head, rows),
          h('nav', {class: 'pager', 'aria-label': 'Pages'},
            offset > 0 ? h('a', {class: 'button', href: at(Math.max(0, offset - SEARCH_PAGE))}, '← Better') : null,
            h('span', {class: 'muted'}, found.results.length
              ? `results ${offset + 1}–${offset + found.results.length} (${mode})` : 'No results'),
            found.results.length === SEARCH_PAGE ? h('a', {class: 'button', href: at(offset + SEARCH_PAGE)}, 'More →') : null)];
}

async function list(ctx, params, filters) {
  const offset = Number(params.get('offset') || 0);
  const page = await api('GET', '/v1/memories/', {query: {
    ...ctx.scopeQuery(), limit: PAGE, offset, filters: filters ? JSON.stringify(filters) : null}});
  const at = n => { const p = new URLSearchParams(params); p.set('offset', String(n)); return `#/memories?${p}`; };
  return [table(['memory', 'type', 'importance', 'confidence', 'created'], page.results.map(item => row(item, null))),
          h('nav', {class: 'pager', 'aria-label': 'Pages'},
            offset > 0 ? h('a', {class: 'button', href: at(Math.max(0, offset - PAGE))}, '← Newer') : null,
            h('span', {class: 'muted'}, page.results.length ? `${offset + 1}–${offset + page.results.length}` : 'No memories'),
            page.next_offset !== null ? h('a', {class: 'button', href: at(page.next_offset)}, 'Older →') : null)];
}

export async function renderMemories(ctx, root, _arg, params) {
  append(root, h('h1', {tabindex: -1}, ctx.scope ? `Memories of ${scopeLabel(ctx.scope)}` : 'Memories'));
  if (!ctx.scope) {
    append(root, h('p', {}, 'Pick a scope above to list its memories.'));
    return null;
  }
  const types = ['observation', 'decision', 'learning', 'error', 'pattern', 'preference', 'fact',
                 'procedure', 'task'];
  append(root, form(ctx, params, types));
  try {
    const filters = filterOf(params);
    append(root, ...(params.get('q') ? await search(ctx, params, filters) : await list(ctx, params, filters)));
  } catch (error) {  // a filter the API refuses: said under the form, kept to be corrected
    append(root, h('p', {class: 'errors', role: 'alert'}, error?.message || String(error)));
  }
  return {refreshOn: event => !params.get('q') && inScope(ctx.scope, event)};
}
