// The entity graph of a scope around one entity: pan, zoom, depth; an entity's relations
// and memories beside it; click through to a neighbour.

import {api} from '../api.js';
import {append, excerpt, fmtDate, h, s, scopeLabel} from '../dom.js';
import {layout} from '../layout.js';

export const MAX_NODES = 1000;

function nearest(center, graph) {
  const next = new Map();
  for (const r of graph.relations) {
    for (const [a, b] of [[r.source, r.target], [r.target, r.source]]) {
      if (!next.has(a)) next.set(a, []);
      next.get(a).push(b);
    }
  }
  const seen = new Set([center]);
  const queue = [center];
  while (queue.length && seen.size < MAX_NODES) {
    for (const other of next.get(queue.shift()) || []) {
      if (seen.size >= MAX_NODES) break;
      if (!seen.has(other)) { seen.add(other); queue.push(other); }
    }
  }
  return seen;
}

function panZoom(svg, world) {
  const view = {x: 0, y: 0, k: 1};
  const apply = () => world.setAttribute('transform', `translate(${view.x} ${view.y}) scale(${view.k})`);
  const zoom = (factor, cx = 0, cy = 0) => {
    const k = Math.min(8, Math.max(0.1, view.k * factor));
    view.x = cx - (cx - view.x) * k / view.k;
    view.y = cy - (cy - view.y) * k / view.k;
    view.k = k;
    apply();
  };
  let drag = null;
  svg.addEventListener('pointerdown', event => {
    if (event.target.closest('.node')) return;
    drag = [event.clientX - view.x, event.clientY - view.y];
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener('pointermove', event => {
    if (!drag) return;
    view.x = event.clientX - drag[0];
    view.y = event.clientY - drag[1];
    apply();
  });
  svg.addEventListener('pointerup', () => { drag = null; });
  svg.addEventListener('wheel', event => {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    const scale = svg.viewBox.baseVal.width / box.width;
    const cx = (event.clientX - box.left) * scale + svg.viewBox.baseVal.x;
    const cy = (event.clientY - box.top) * scale + svg.viewBox.baseVal.y;
    zoom(event.deltaY < 0 ? 1.2 : 1 / 1.2, cx, cy);
  }, {passive: false});
  return {
    zoomIn: () => zoom(1.25), zoomOut: () => zoom(0.8),
    reset: () => { view.x = 0; view.y = 0; view.k = 1; apply(); },
  };
}

function details(name, graph, depth) {
  const entity = graph.entities.find(e => e.name === name);
  const relations = graph.relations.filter(r => r.source === name || r.target === name);
  // The current memories behind its open relations (a closed one's memories are linked).
  const ids = new Set(relations.filter(r => !r.valid_to).flatMap(r => r.memory_ids));
  const memories = graph.memories.filter(m => ids.has(m.id));
  const link = other => h('a', {href: `#/graph?entity=${encodeURIComponent(other)}&depth=${depth}`}, other);
  return h('div', {},
    h('h2', {}, name),
    entity ? h('p', {class: 'muted'}, `${entity.type}${entity.summary ? ` · ${entity.summary}` : ''}`) : null,
    h('h3', {}, `Relations (${relations.length})`),
    h('ul', {class: 'relations'}, relations.map(r => h('li', {class: r.valid_to ? 'closed' : ''},
      r.source === name ? [r.relation, ' → ', link(r.target)] : [link(r.source), ' ', r.relation, ' → ', h('bdi', {}, name)],
      r.valid_to ? [h('span', {class: 'muted'}, ` (closed ${fmtDate(r.valid_to)}: `),
                    r.memory_ids.map((id, i) => h('a', {href: `#/memory/${encodeURIComponent(id)}`}, `memory ${i + 1}`)),
                    h('span', {class: 'muted'}, ')')] : null))),
    h('h3', {}, `Memories (${memories.length})`),
    memories.length ? h('ul', {}, memories.map(m => h('li', {}, h('a', {href: `#/memory/${encodeURIComponent(m.id)}`}, excerpt(m.memory)))))
      : h('p', {class: 'muted'}, 'No memory linked.'));
}

export async function renderGraph(ctx, root, _arg, params) {
  append(root, h('h1', {tabindex: -1}, ctx.scope ? `Graph of ${scopeLabel(ctx.scope)}` : 'Graph'));
  if (!ctx.scope) {
    append(root, h('p', {}, 'Pick a scope above to see its entity graph.'));
    return null;
  }
  const query = ctx.scopeQuery();
  const entities = await api('GET', '/v1/entities/', {query: {...query, limit: MAX_NODES}});
  if (!entities.length) {
    append(root, h('p', {class: 'muted'}, 'No entities in this scope (a graph store and adds with infer fill it).'));
    return null;
  }
  const depth = Math.min(3, Math.max(1, Number(params.get('depth') || 1)));
  const center = params.get('entity') || entities[0].name;
  const graph = await api('GET', `/v1/entities/${encodeURIComponent(center)}/relations/`,
                          {query: {...query, depth, include_closed: true, include_memories: true}});
  const kept = nearest(center, graph);
  const names = [...new Set([center, ...graph.entities.map(e => e.name)])].filter(n => kept.has(n));
  const relations = graph.relations.filter(r => kept.has(r.source) && kept.has(r.target));
  const where = layout(names, relations.map(r => [r.source, r.target]));

  const picker = h('select', {'aria-label': 'Entity'}, entities.map(e => h('option', {value: e.name}, e.name)));
  picker.value = center;
  const depthPicker = h('select', {'aria-label': 'Depth'}, [1, 2, 3].map(d => h('option', {value: d}, `depth ${d}`)));
  depthPicker.value = String(depth);
  const go = () => ctx.go(`#/graph?entity=${encodeURIComponent(picker.value)}&depth=${depthPicker.value}`);
  picker.addEventListener('change', go);
  depthPicker.addEventListener('change', go);

  const xs = names.map(n => where.get(n)[0]), ys = names.map(n => where.get(n)[1]);
  const pad = 80;
  const box = [Math.min(...xs) - pad, Math.min(...ys) - pad, Math.max(...xs) - Math.min(...xs) + 2 * pad,
               Math.max(...ys) - Math.min(...ys) + 2 * pad];
  const world = s('g');
  const svg = s('svg', {class: 'graph', viewBox: box.join(' '), role: 'group', 'aria-label': `Entities around ${center}`}, world);
  const side = h('aside', {class: 'side', 'aria-live': 'polite'});
  const select = name => {
    for (const node of world.querySelectorAll('.node')) node.classList.toggle('selected', node.dataset.name === name);
    side.replaceChildren(details(name, graph, depth));
  };
  for (const r of relations) {
    const [x1, y1] = where.get(r.source), [x2, y2] = where.get(r.target);
    world.append(s('g', {class: r.valid_to ? 'edge closed' : 'edge'},
      s('title', {}, `${r.source} ${r.relation} ${r.target}${r.valid_to ? ' (closed)' : ''}`),
      s('line', {x1, y1, x2, y2}),
      s('text', {x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3, 'text-anchor': 'middle'}, r.relation)));
  }
  for (const name of names) {
    const [x, y] = where.get(name);
    const node = s('g', {class: name === center ? 'node center' : 'node', tabindex: 0, role: 'button',
                         'aria-label': name, transform: `translate(${x} ${y})`, dataset: {name}},
      s('circle', {r: name === center ? 14 : 10}), s('text', {y: 26, 'text-anchor': 'middle'}, name));
    node.addEventListener('click', () => select(name));
    node.addEventListener('dblclick', () => ctx.go(`#/graph?entity=${encodeURIComponent(name)}&depth=${depth}`));
    node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); select(name); }
    });
    world.append(node);
  }
  const controls = panZoom(svg, world);
  const capped = graph.entities.length > MAX_NODES;
  append(root, 
    h('div', {class: 'row toolbar'}, h('label', {class: 'field'}, h('span', {}, 'entity'), picker), depthPicker,
      h('button', {type: 'button', onclick: controls.zoomIn, 'aria-label': 'Zoom in'}, '+'),
      h('button', {type: 'button', onclick: controls.zoomOut, 'aria-label': 'Zoom out'}, '−'),
      h('button', {type: 'button', onclick: controls.reset}, 'Reset view'),
      h('span', {class: 'muted'}, `${names.length} entities, ${relations.length} relations`)),
    entities.length >= MAX_NODES ? h('p', {class: 'warning'}, `This scope has ${MAX_NODES.toLocaleString()} entities or more: pick one to see its neighbourhood.`) : null,
    capped ? h('p', {class: 'warning'}, `This neighbourhood has ${graph.entities.length.toLocaleString()} entities; the ${MAX_NODES.toLocaleString()} nearest to ${center} are drawn. Lower the depth to see all of them.`) : null,
    h('div', {class: 'graph-area'}, svg, side));
  select(center);
  return null;
}
