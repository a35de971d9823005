// Sections of indexed notes (Memory.index_folder), by file, with their lines.

import {api} from '../api.js';
import {append, excerpt, h, inScope, scopeLabel} from '../dom.js';

const PAGE = 200;

export async function renderNotes(ctx, root, _arg, params) {
  append(root, h('h1', {tabindex: -1}, ctx.scope ? `Notes of ${scopeLabel(ctx.scope)}` : 'Notes'));
  if (!ctx.scope) {
    append(root, h('p', {}, 'Pick a scope above to see its indexed notes.'));
    return null;
  }
  const offset = Number(params.get('offset') || 0);
  const page = await api('GET', '/v1/memories/', {query: {
    ...ctx.scopeQuery(), limit: PAGE, offset, filters: JSON.stringify({source: 'notes'})}});
  const files = new Map();
  for (const item of page.results) {
    const path = String(item.metadata.path);
    if (!files.has(path)) files.set(path, []);
    files.get(path).push(item);
  }
  if (!files.size) {
    append(root, h('p', {class: 'muted'}, 'No indexed notes in this scope (memkit index-folder, or POST /v1/index/).'));
    return null;
  }
  for (const [path, items] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    items.sort((a, b) => (a.metadata.line_start || 0) - (b.metadata.line_start || 0));
    append(root, h('section', {class: 'note-file'}, h('h2', {}, path),
      h('ul', {}, items.map(item => h('li', {},
        h('span', {class: 'where'}, `${path}:${item.metadata.line_start}–${item.metadata.line_end}`), ' ',
        item.metadata.heading ? h('strong', {}, item.metadata.heading) : null, ' ',
        h('a', {href: `#/memory/${encodeURIComponent(item.id)}`}, excerpt(item.memory)))))));
  }
  if (page.next_offset !== null) {
    append(root, h('a', {class: 'button', href: `#/notes?offset=${page.next_offset}`}, 'More notes →'));
  }
  return {refreshOn: event => inScope(ctx.scope, event)};
}
