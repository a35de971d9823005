// Tasks of a scope by status; the status of each can be changed here.

import {api} from '../api.js';
import {append, excerpt, fmtDate, h, inScope, scopeLabel} from '../dom.js';

const STATUSES = ['open', 'in_progress', 'done', 'cancelled'];
const LANE = 100;  // the newest of each status

export async function renderTasks(ctx, root) {
  append(root, h('h1', {tabindex: -1}, ctx.scope ? `Tasks of ${scopeLabel(ctx.scope)}` : 'Tasks'));
  if (!ctx.scope) {
    append(root, h('p', {}, 'Pick a scope above to see its tasks.'));
    return null;
  }
  const lanes = await Promise.all(STATUSES.map(status =>
    api('GET', '/v1/tasks/', {query: {...ctx.scopeQuery(), status, limit: LANE}})));
  const change = (task, select) => async () => {
    try {
      await api('PUT', `/v1/tasks/${encodeURIComponent(task.id)}/`, {body: {status: select.value}});
      ctx.say(`Moved to ${select.value}.`);
      ctx.go('#/tasks');
    } catch (error) { ctx.fail(error); }
  };
  const board = h('div', {class: 'board'}, STATUSES.map((status, i) => {
    const tasks = lanes[i].results;
    return h('section', {class: 'lane', 'aria-label': status},
      h('h2', {}, `${status.replace('_', ' ')} (${tasks.length === LANE ? `newest ${LANE}` : tasks.length})`),
      h('ul', {}, tasks.map(task => {
        const select = h('select', {'aria-label': `Status of: ${excerpt(task.memory, 80)}`},
                         STATUSES.map(s => h('option', {value: s}, s.replace('_', ' '))));
        select.value = status;
        select.addEventListener('change', change(task, select));
        return h('li', {class: 'task'}, h('a', {href: `#/memory/${encodeURIComponent(task.id)}`}, excerpt(task.memory)),
                 h('div', {class: 'row'}, select, h('span', {class: 'muted'}, fmtDate(task.created_at))));
      })));
  }));
  append(root, lanes.some(lane => lane.results.length) ? board : h('p', {class: 'muted'}, 'No tasks in this scope.'));
  return {refreshOn: event => inScope(ctx.scope, event)};
}
