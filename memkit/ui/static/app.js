// The dashboard shell: sign-in, the scope picker, routing between views, the live feed.

import {api, exchange, follow, getKey, setKey} from './api.js';
import {clear, h, scopeLabel} from './dom.js';
import {renderGraph} from './views/graph.js';
import {renderMemories} from './views/memories.js';
import {renderMemory} from './views/memory.js';
import {renderNotes} from './views/notes.js';
import {renderOverview} from './views/overview.js';
import {renderPlayground} from './views/playground.js';
import {renderTasks} from './views/tasks.js';

const VIEWS = {
  overview: renderOverview, memories: renderMemories, memory: renderMemory, graph: renderGraph,
  tasks: renderTasks, notes: renderNotes, playground: renderPlayground,
};
const SCOPE = 'memkit.scope';
const main = document.getElementById('main');
const status = document.getElementById('status');
const picker = document.getElementById('scope');
const liveBadge = document.getElementById('live');
const stale = document.getElementById('stale');

const ctx = {
  scope: JSON.parse(sessionStorage.getItem(SCOPE) || 'null'),
  scopes: [],
  recent: [],
  everyScope: null,
  /** The statistics of every scope: those the scope list was read from, once, then fresh ones. */
  statsOfEveryScope() {
    const pending = this.everyScope || api('GET', '/v1/stats/');
    this.everyScope = null;
    return pending;
  },
  view: null,
  /** The scope as query parameters (empty: every scope the key may see). */
  scopeQuery() {
    return {...(this.scope || {})};
  },
  go(hash) {
    if (location.hash === hash) route(); else location.hash = hash;  // hashchange draws it
  },
  say(message, kind = 'info') {
    status.hidden = !message;
    status.className = `status ${kind}`;
    status.textContent = message || '';
  },
  fail(error) {
    ctx.say(error?.message || String(error), 'error');
  },
  /** Offer to redraw the view (a change arrived while someone works in it). */
  changedElsewhere() {
    stale.hidden = false;
  },
};

let generation = 0;
let refreshTimer = null;
let scopesTimer = null;
let moved = false;
let scopesFailed = false;

/** Whether a redraw now would undo someone's work: a field or button in use, or a view busy
 *  (an open editor, wherever the focus is). */
function interacting() {
  const active = document.activeElement;
  return (main.contains(active) && active.matches('input, textarea, select, button')) ||
    Boolean(ctx.view?.busy?.());
}

/** Draw the view the hash names; a refresh (a change arrived) never redraws under someone's hands. */
async function route(refresh = false) {
  if (refresh && interacting()) {
    ctx.changedElsewhere();
    return;
  }
  const mine = ++generation;
  clearTimeout(refreshTimer);
  stale.hidden = true;
  const [path, search] = location.hash.replace(/^#\/?/, '').split('?');
  const [name, ...rest] = (path || 'overview').split('/');
  const render = VIEWS[name] || VIEWS.overview;
  const arg = rest.map(part => { try { return decodeURIComponent(part); } catch { return part; } }).join('/');
  const params = new URLSearchParams(search || '');
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.view === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  ctx.say('');
  if (scopesFailed) await listScopes();  // the last try failed: try again, or say why once more
  ctx.view = null;
  const root = h('div', {class: `view view-${name}`});
  if (!main.firstChild) main.append(h('p', {class: 'muted'}, 'Loading…'));
  try {
    const handle = await render(ctx, root, arg, params);
    if (mine !== generation) return;
    if (refresh && interacting()) {
      ctx.changedElsewhere();
      return;
    }
    ctx.view = handle || null;
    main.replaceChildren(root);
    performance.mark(`memkit:${name}`);  // bench/ui.py reads when each view was drawn
    if (moved) root.querySelector('h1')?.focus();
    moved = true;
    document.title = `memkit · ${root.querySelector('h1')?.textContent || name}`;
  } catch (error) {
    if (mine !== generation) return;
    main.replaceChildren(h('div', {class: 'view'}, h('h1', {tabindex: -1}, 'Cannot show this'),
                           h('p', {}, error?.message || String(error))));
    ctx.fail(error);
  }
}

async function loadScopes() {
  const pending = api('GET', '/v1/stats/');
  ctx.everyScope = pending;  // the overview of every scope reads the same figures once
  const stats = await pending;
  setTimeout(() => { if (ctx.everyScope === pending) ctx.everyScope = null; }, 2000);
  ctx.scopes = stats.by_scope.map(({user_id, agent_id, run_id}) =>
    Object.fromEntries(Object.entries({user_id, agent_id, run_id}).filter(([, v]) => v)));
  const key = JSON.stringify(ctx.scope);
  if (ctx.scope === null || !ctx.scopes.some(s => JSON.stringify(s) === key)) {
    if (ctx.scope === null && ctx.scopes.length) setScope(ctx.scopes[0], false);
  }
  fillPicker();
}

/** The scope list into the picker; when the API cannot give it (the store is down), why. */
function listScopes() {
  return loadScopes().then(() => { scopesFailed = false; }, error => {
    if (error.status === 401) {
      setKey(null);
      return showLogin(error.message);
    }
    scopesFailed = true;
    ctx.say(`The scopes could not be read: ${error?.message || error}`, 'error');
  });
}

function fillPicker() {
  const options = ctx.scopes.map(scope => h('option', {value: JSON.stringify(scope)}, scopeLabel(scope)));
  const current = JSON.stringify(ctx.scope);
  if (ctx.scope && !ctx.scopes.some(scope => JSON.stringify(scope) === current)) {
    options.unshift(h('option', {value: current}, scopeLabel(ctx.scope)));
  }
  picker.replaceChildren(h('option', {value: ''}, 'every scope'), ...options);
  picker.value = ctx.scope ? current : '';
}

function setScope(scope, rerender = true) {
  ctx.scope = scope && Object.keys(scope).length ? scope : null;
  sessionStorage.setItem(SCOPE, JSON.stringify(ctx.scope));
  if (rerender) route();
}

picker.addEventListener('change', () => setScope(picker.value ? JSON.parse(picker.value) : null));


function onEvent(event) {
  ctx.recent.unshift({...event, received: new Date().toISOString()});
  ctx.recent.length = Math.min(ctx.recent.length, 50);
  const scope = {user_id: event.data.user_id, agent_id: event.data.agent_id, run_id: event.data.run_id};
  const wanted = Object.fromEntries(Object.entries(scope).filter(([, v]) => v));
  if (!ctx.scopes.some(s => JSON.stringify(s) === JSON.stringify(wanted))) {
    clearTimeout(scopesTimer);
    scopesTimer = setTimeout(() => loadScopes().catch(ctx.fail), 300);
  }
  const handle = ctx.view;
  if (!handle?.refreshOn || !handle.refreshOn(event)) return;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => route(true), 250);
}

document.getElementById('stale-refresh').addEventListener('click', () => route());

function showLogin(reason) {
  document.getElementById('login-reason').textContent = reason;
  document.getElementById('login').hidden = false;
  document.querySelector('header.top').hidden = true;
  main.hidden = true;
  document.getElementById('login-key').focus();
}

document.getElementById('login-form').addEventListener('submit', event => {
  event.preventDefault();
  setKey(document.getElementById('login-key').value.trim());
  location.reload();
});

async function start() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const token = fragment.get('token');
  const key = fragment.get('key');
  if (token || key) {
    history.replaceState(null, '', `${location.pathname}#/overview`);  // no key left in the URL
    if (key) setKey(key);
    else {
      try { await exchange(token); } catch (error) {
        if (!getKey()) return showLogin(error.message);
      }
    }
  }
  if (!getKey()) {
    const info = await fetch('/ui/session', {credentials: 'omit'}).then(r => r.json());
    if (info.keys) return showLogin('This server needs an API key.');
  }
  window.addEventListener('hashchange', () => route());
  if (ctx.scope === null) {  // a new tab learns the scopes first
    await listScopes();
    if (!main.hidden) await route();
  } else {  // a tab that knows its scope draws the view first
    fillPicker();
    await route();
    await listScopes();
  }
  follow(onEvent, state => {
    liveBadge.textContent = state;
    liveBadge.className = `live ${state}`;
  });
}

document.querySelector('.skip').addEventListener('click', event => {
  event.preventDefault();  // the hash is the route: focus the content without changing it
  main.focus();
});
clear(main);
start();
