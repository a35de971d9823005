// The REST API, with the key of this tab (kept in sessionStorage, never in the URL).

const KEY = 'memkit.key';

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
}

function headers(extra) {
  const out = {Accept: 'application/json', ...extra};
  const key = getKey();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

function url(path, query) {
  const target = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== null && value !== undefined && value !== '') target.searchParams.set(name, value);
  }
  return target;
}

/** `ifMatch`: the version a write is made from (the memory's ETag); 412 if it changed since. */
export async function api(method, path, {query, body, signal, ifMatch} = {}) {
  const init = {method, headers: headers(ifMatch ? {'If-Match': ifMatch} : {}), signal,
                credentials: 'omit', cache: 'no-store'};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url(path, query), init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, data?.error?.type ?? 'http_error',
                       data?.error?.message ?? `${response.status} ${response.statusText}`);
  }
  return data;
}

/** Trade the one-time token of `memkit ui`'s link for this tab's key. */
export async function exchange(token) {
  const response = await fetch('/ui/session', {
    method: 'POST', headers: {Authorization: `Bearer ${token}`}, credentials: 'omit'});
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, 'unauthorized', data?.error?.message ?? 'invalid link');
  setKey(data.key);
}

/** The change feed (Server-Sent Events read through fetch, so the key travels in a header).
 *  Calls onEvent({type, data}) per event and onState('live'|'offline'); reconnects. */
export function follow(onEvent, onState) {
  const controller = new AbortController();
  let delay = 1000;
  const run = async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(url('/v1/events'), {
          headers: headers({Accept: 'text/event-stream'}), signal: controller.signal,
          credentials: 'omit', cache: 'no-store'});
        if (!response.ok || !response.body) throw new Error(`feed: ${response.status}`);
        onState('live');
        delay = 1000;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = parseEvent(block);
            if (event) onEvent(event);
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      onState('offline');
      await new Promise(resolve => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 30000);
    }
  };
  run();
  return () => controller.abort();
}

function parseEvent(block) {
  let type = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const [field, ...rest] = line.split(':');
    const value = rest.join(':').replace(/^ /, '');
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
  }
  if (!data.length) return null;
  try { return {type, data: JSON.parse(data.join('\n'))}; } catch { return null; }
}
