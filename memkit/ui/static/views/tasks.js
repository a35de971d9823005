// Tasks of a scope by status; the status of each can be changed here.

import {api} from '../api.js';
import {fmtDate, h, inScope, scopeLabel} from '../dom.js';

const STATUSES = ['open', 'in_progress', 'done', 'cancelled'];

export async function renderTasks(ctx, root) {
  root.append(h('h1', {tabindex: -1}, ctx.scope ? `Tasks of ${scopeLabel(ctx.scope)}` : 'Tasks'));
  if (!ctx.scope) {
    root.append(h('p', {}, 'Pick a scope above to see its tasks.'));
    return null;
  }
  const found = await api('GET', '/v1/tasks/', {query: {...ctx.scopeQuery(), limit: 1000}});
  const change = (task, select) => async () => {
    try {
      await api('PUT', `/v1/tasks/${encodeURIComponent(task.id)}/`, {body: {status: select.value}});
      ctx.say(`Moved to ${select.value}.`);
      ctx.go('#/tasks');
    } catch (error) { ctx.fail(error); }
  };
  const board = h('div', {class: 'board'}, STATUSES.map(status => {
    const tasks = found.results.filter(t => (t.metadata.status || 'open') === status);
    return h('section', {class: 'lane', 'aria-label': status},
      h('h2', {}, `${status.replace('_', ' ')} (${tasks.length})`),
      h('ul', {}, tasks.map(task => {
        const select = h('select', {'aria-label': `Status of: ${task.memory}`},
                         STATUSES.map(s => h('option', {value: s}, s.replace('_', ' '))));
        select.value = status;
        select.addEventListener('change', change(task, select));
        return h('li', {class: 'task'}, h('a', {href: `#/memory/${encodeURIComponent(task.id)}`}, task.memory),
                 h('div', {class: 'row'}, select, h('span', {class: 'muted'}, fmtDate(task.created_at))));
      })));
  }));
  root.append(found.results.length ? board : h('p', {class: 'muted'}, 'No tasks in this scope.'));
  return {refreshOn: event => inScope(ctx.scope, event)};
}
