// Overview: what the scope holds, as charts, and what changed lately.

import {api} from '../api.js';
import {bars, columns, growth} from '../charts.js';
import {append, excerpt, fmtDate, h, scopeLabel} from '../dom.js';

const BINS = Array.from({length: 10}, (_, i) => (i / 10).toFixed(1));

function memoryHref(id) {
  return `#/memory/${encodeURIComponent(id)}`;
}

export async function renderOverview(ctx, root) {
  const query = ctx.scopeQuery();
  const [stats, newest] = await Promise.all([
    ctx.scope ? api('GET', '/v1/stats/', {query}) : ctx.statsOfEveryScope(),
    ctx.scope ? api('GET', '/v1/memories/', {query: {...query, limit: 8}}) : null,
  ]);
  const states = Object.entries(stats.by_state).map(([state, n]) =>
    h('div', {class: 'card'}, h('span', {class: 'big'}, String(n)), h('span', {}, state)));
  const scopeRows = stats.by_scope.slice(0, 12).map(scope => [scopeLabel(scope), scope.memories]);
  const typeRows = Object.entries(stats.by_type).map(([type, n]) => [type, n]);
  const entityRows = Object.entries(stats.top_entities).map(([name, n]) =>
    [name, n, `#/graph?entity=${encodeURIComponent(name)}`]);
  append(root, 
    h('h1', {tabindex: -1}, ctx.scope ? `Overview of ${scopeLabel(ctx.scope)}` : 'Overview of every scope'),
    h('section', {class: 'cards', 'aria-label': 'Memories by state'},
      h('div', {class: 'card total'}, h('span', {class: 'big'}, String(stats.memories)), h('span', {}, 'memories')),
      states),
    h('section', {class: 'charts'},
      bars('Memories per scope', scopeRows),
      bars('Memories per type', typeRows),
      growth('Growth over time', stats.growth),
      columns(stats.decay ? 'Confidence (decayed)' : 'Confidence', stats.confidence_histogram, BINS),
      bars('Top entities (open relations)', entityRows,
           {empty: 'No entities (a graph store fills this).'})),
    h('section', {class: 'recent'},
      h('h2', {}, 'Recent changes'),
      ctx.recent.length ? h('ol', {class: 'feed'}, ctx.recent.slice(0, 15).map(event =>
        h('li', {}, h('span', {class: `badge ${event.type}`}, event.type.replace('memory_', '')), ' ',
          event.type === 'consolidation_complete' ? 'consolidation' :
          event.type === 'entity_created' ?
            h('a', {href: `#/graph?entity=${encodeURIComponent(event.data.name)}`}, event.data.name) :
            h('a', {href: memoryHref(event.data.id)}, excerpt(event.data.memory) || event.data.id),
          ' ', h('span', {class: 'muted'}, fmtDate(event.data.timestamp)))))
        : h('p', {class: 'muted'}, 'Changes made while this page is open appear here.'),
      newest ? [h('h2', {}, 'Newest memories'), h('ol', {class: 'feed'}, newest.results.map(item =>
        h('li', {}, h('a', {href: memoryHref(item.id)}, excerpt(item.memory)), ' ',
          h('span', {class: 'muted'}, fmtDate(item.created_at)))))] : null));
  return {refreshOn: () => true};
}
