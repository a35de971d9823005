// One memory: its text, metadata and validity, its versions and history, and what to do with it.

import {api} from '../api.js';
import {append, confirmButton, diffView, excerpt, fmtDate, fmtNum, h, isolated, scopeLabel} from '../dom.js';

const REVERTIBLE = new Set(['ADD', 'UPDATE', 'DELETE']);

/** Whether `version` is valid now: not ended, not expired, already begun. */
function isCurrent(version, now = Date.now()) {
  return !version.valid_to && !(version.expires_at && Date.parse(version.expires_at) <= now) &&
    !(version.valid_from && Date.parse(version.valid_from) > now);
}

/** What a purge removes, said before it is confirmed: the API purges the whole chain, from
 *  any of its versions (there is no purge of one past version alone). */
function purgeWarning(id, versions) {
  const last = versions?.[versions.length - 1];
  const trace = 'and its history (only a PURGE row without text stays for each version).';
  if (!last) return 'Purging removes what is left of this memory for good: its history.';
  const what = last.id === id ? 'this memory for good'
                              : 'the whole memory for good, not only this past version';
  if (!isCurrent(last)) {
    const n = versions.length;
    return `Purging removes ${what}: ${n === 1 ? 'its only version' : `all ${n} of its versions`} ` +
           `(none is current now) ${trace}`;
  }
  const past = versions.length - 1;
  const older = past === 0 ? '' : past === 1 ? ', its past version' : `, all ${past} of its past versions`;
  return `Purging removes ${what}: its current text “${isolated(excerpt(last.memory, 200))}”${older} ${trace}`;
}

async function optional(request) {
  try { return await request; } catch (error) { if (error.status === 404) return null; throw error; }
}

function facts(item) {
  const rows = [
    ['scope', scopeLabel(item)], ['type', item.memory_type], ['importance', fmtNum(item.importance)],
    ['confidence', fmtNum(item.confidence)], ['accessed', `${item.access_count} times`],
    ['created', fmtDate(item.created_at)], ['updated', fmtDate(item.updated_at)],
    ['valid from', fmtDate(item.valid_from)], ['valid until', item.valid_to ? fmtDate(item.valid_to) : 'now'],
    ['expires', fmtDate(item.expires_at)], ['id', item.id],
  ];
  return h('dl', {class: 'facts'}, rows.filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function metadata(item) {
  const entries = Object.entries(item.metadata || {});
  if (!entries.length) return h('p', {class: 'muted'}, 'No metadata.');
  return h('dl', {class: 'facts metadata'}, entries.map(([k, v]) =>
    [h('dt', {}, k), h('dd', {}, typeof v === 'string' ? v : JSON.stringify(v))]));
}

function timeline(versions) {
  return h('ol', {class: 'timeline'}, versions.map((version, i) => h('li', {},
    h('div', {class: 'when'}, `${fmtDate(version.valid_from || version.created_at)} → `,
      version.valid_to ? fmtDate(version.valid_to) : 'now'),
    i === 0 ? h('p', {}, version.memory) : diffView(versions[i - 1].memory, version.memory))));
}

function history(ctx, id, rows, rerender) {
  const revert = row => async () => {
    try {
      await api('POST', `/v1/memories/${encodeURIComponent(id)}/history/${encodeURIComponent(row.id)}/revert/`);
      rerender(`Reverted the ${row.event}.`);
    } catch (error) { ctx.fail(error); }
  };
  return h('table', {class: 'list history'},
    h('thead', {}, h('tr', {}, ['when', 'event', 'actor', 'change', ''].map(c => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, rows.map(row => h('tr', {},
      h('td', {}, fmtDate(row.timestamp)),
      h('td', {}, h('span', {class: `badge ${row.event}`}, row.event), row.reverts ? ' (a revert)' : ''),
      h('td', {}, [row.actor_id, row.role].filter(Boolean).map(isolated).join(' · ') || '—'),
      h('td', {class: 'text'}, row.event === 'UPDATE' ? diffView(row.old_value, row.new_value)
                                                       : row.new_value ?? row.old_value ?? ''),
      h('td', {}, REVERTIBLE.has(row.event) && !row.reverts
        ? confirmButton('Revert', 'Revert this change?', revert(row), {class: 'small'}) : null)))));
}

function editor(ctx, item, rerender, state) {
  const text = h('textarea', {rows: 4, 'aria-label': 'New text'});
  text.value = item.memory;
  const meta = h('textarea', {rows: 2, 'aria-label': 'Metadata to merge (JSON)', placeholder: '{"key": "value"}'});
  const form = h('form', {class: 'editor'}, h('label', {}, 'Text', text),
    h('label', {}, 'Metadata to merge (JSON, optional)', meta),
    h('div', {class: 'row'}, h('button', {type: 'submit'}, 'Save'),
      h('button', {type: 'button', onclick: () => { state.editing = false; form.remove(); }}, 'Cancel')));
  form.addEventListener('submit', async event => {
    event.preventDefault();
    let merge;
    try { merge = meta.value.trim() ? JSON.parse(meta.value) : undefined; } catch (error) {
      return ctx.say(`The metadata is not JSON: ${error.message}`, 'error');
    }
    try {
      // the version the editor opened on (the server's ETag): a change made elsewhere since
      // is refused by the server (412; 404 once deleted) and offered instead of overwritten
      await api('PUT', `/v1/memories/${encodeURIComponent(item.id)}/`,
                {body: {text: text.value, metadata: merge}, ifMatch: `"${item.updated_at}"`});
      state.editing = false;
      rerender('Saved: the old text is now a past version.');
    } catch (error) {
      if (error.status !== 412 && error.status !== 404) return ctx.fail(error);
      ctx.changedElsewhere();
      ctx.say('Not saved: this memory changed elsewhere since you opened the editor. ' +
              'Your text is still here; show the change, then edit again.', 'error');
    }
  });
  return form;
}

export async function renderMemory(ctx, root, id) {
  const path = `/v1/memories/${encodeURIComponent(id)}`;
  const [versions, rows] = await Promise.all([
    optional(api('GET', `${path}/versions/`)), optional(api('GET', `${path}/history/`))]);
  const last = versions?.[versions.length - 1];
  const current = last && last.id === id && isCurrent(last);
  const item = current ? await optional(api('GET', `${path}/?reinforce=false`)) : null;
  const state = {editing: false};
  const rerender = message => { ctx.go(`#/memory/${encodeURIComponent(id)}`); if (message) setTimeout(() => ctx.say(message), 50); };
  const shown = item || versions?.find(version => version.id === id) || last;
  if (!shown && !rows) {
    append(root, h('h1', {tabindex: -1}, 'No such memory'), h('p', {}, `Nothing is stored under ${id} (purged?).`));
    return null;
  }
  const actions = h('div', {class: 'actions'});
  const slot = h('div');
  if (item) {
    actions.append(
      h('button', {type: 'button', onclick: () => {
        state.editing = true;
        slot.replaceChildren(editor(ctx, item, rerender, state));
        slot.querySelector('textarea').focus();
      }}, 'Edit'),
      h('button', {type: 'button', onclick: async () => {
        await api('POST', `${path}/feedback/`, {body: {useful: true}}).then(() => ctx.say('Marked useful.'), ctx.fail);
      }}, 'Useful'),
      h('button', {type: 'button', onclick: async () => {
        await api('POST', `${path}/feedback/`, {body: {useful: false}}).then(() => ctx.say('Marked not useful.'), ctx.fail);
      }}, 'Not useful'),
      confirmButton('Delete', 'Delete it?', async () => {
        try { await api('DELETE', `${path}/`); rerender('Deleted: its history stays (revert the DELETE to bring it back).'); }
        catch (error) { ctx.fail(error); }
      }));
  }
  actions.append(confirmButton('Purge', 'Purge all of it for good?', async () => {
    try {
      await api('DELETE', `${path}/`, {query: {hard: true}});
      ctx.go('#/memories');
      setTimeout(() => ctx.say('Purged: the memory and its past versions are gone for good.'), 50);
    } catch (error) { ctx.fail(error); }
  }, {class: 'danger'}, purgeWarning(id, versions)));
  append(root, 
    h('h1', {tabindex: -1}, item ? 'Memory' : last && last.id !== id ? 'A past version' : 'Memory (no longer valid)'),
    shown ? h('blockquote', {class: 'memory-text'}, shown.memory) : null,
    actions, slot,
    h('div', {class: 'columns2'},
      h('section', {}, h('h2', {}, 'Details'), shown ? facts(shown) : null,
        h('h2', {}, 'Metadata'), shown ? metadata(shown) : null),
      h('section', {}, h('h2', {}, 'Versions'),
        versions?.length ? timeline(versions) : h('p', {class: 'muted'}, 'No versions left.'))),
    h('section', {}, h('h2', {}, 'History'), rows ? history(ctx, id, rows, rerender) : null));
  return {refreshOn: event => event.data.id === id, busy: () => state.editing};
}
