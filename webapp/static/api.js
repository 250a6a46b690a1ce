// A thin client of the fan API: bearer token from sessionStorage, JSON in
// and out, and problems thrown as ProblemError.
import { t } from './i18n.js';

export class ProblemError extends Error {
  constructor(problem, status, retryAfter) {
    super(problem.title || 'HTTP ' + status);
    this.problem = problem; this.status = status; this.retryAfter = retryAfter;
  }
}

export const token = () => sessionStorage.getItem('token') || '';

export function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, x => x.toString(16).padStart(2, '0')).join('');
}

// An admission pass of a metered event, kept for this tab until it
// expires; holds on that event carry it as X-Admission-Pass.
export function savePass(eventID, pass, expiresAt) {
  sessionStorage.setItem('pass:' + eventID, JSON.stringify({ pass, expires_at: expiresAt }));
}

export function passFor(eventID) {
  try {
    const p = JSON.parse(sessionStorage.getItem('pass:' + eventID) || 'null');
    if (p && new Date(p.expires_at).getTime() > Date.now()) return p;
  } catch { /* a damaged entry is no pass */ }
  sessionStorage.removeItem('pass:' + eventID);
  return null;
}

// OfflineError says the API could not be reached (no connection, or it
// stayed busy through the retries), in words: the browser's own text
// ("Failed to fetch") never reaches a fan.
export class OfflineError extends Error {
  constructor() { super(t('We could not reach Encore. Check your connection and try again.')); }
}

const pause = ms => new Promise(r => setTimeout(r, ms));

// readTries is how often a read is tried: a lost connection or a busy
// answer (502-504) is tried again after 0.5, 1 and 2 s (or the server's
// Retry-After, up to 5 s). Writes are tried once: the fan decides.
const readTries = 4;

export async function request(method, path, body, headers = {}) {
  return read(await send(method, path, body, headers));
}

// watch reads path again for a page that shows the copy whose ETag it holds:
// the server holds the request until the resource changes, for up to
// waitSeconds (Prefer: wait), and answers 304 if it did not. It returns the
// new copy and its ETag, or data null when nothing changed.
export async function watch(path, etag, waitSeconds) {
  const res = await send('GET', path, undefined, etag ? { 'If-None-Match': etag, Prefer: 'wait=' + waitSeconds } : {});
  if (res.status === 304) return { data: null, etag };
  return { data: await read(res), etag: res.headers.get('ETag') };
}

// send is one request, a read tried again as readTries says.
async function send(method, path, body, headers) {
  const h = { ...headers };
  if (token()) h.Authorization = 'Bearer ' + token();
  const pass = method === 'POST' && path === '/v1/holds' && body && body.event_id && passFor(body.event_id);
  if (pass) h['X-Admission-Pass'] = pass.pass;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const tries = method === 'GET' ? readTries : 1;
  let res;
  for (let i = 0; ; i++) {
    try {
      res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      if (i + 1 < tries) { await pause(500 * 2 ** i); continue; }
      throw new OfflineError();
    }
    if (i + 1 < tries && [502, 503, 504].includes(res.status)) {
      const ra = Number(res.headers.get('Retry-After'));
      await pause(ra > 0 && ra <= 5 ? ra * 1000 : 500 * 2 ** i);
      continue;
    }
    break;
  }
  return res;
}

// read turns an answer into its JSON, or throws its problem.
async function read(res) {
  if (res.status === 204) return null;
  const ct = res.headers.get('Content-Type') || '';
  const data = ct.includes('json') ? await res.json().catch(() => ({})) : null;
  if (!res.ok) {
    const p = data && data.type ? data : { type: 'about:blank', title: 'HTTP ' + res.status };
    throw new ProblemError(p, res.status, res.headers.get('Retry-After'));
  }
  return data;
}

export const get = path => request('GET', path);
export const post = (path, body, key) => request('POST', path, body || {}, key ? { 'Idempotency-Key': key } : {});

export async function signIn(userID, email) {
  let device = localStorage.getItem('device');
  if (!device) { device = 'web-' + newKey(); localStorage.setItem('device', device); }
  const out = await request('POST', '/v1/sessions', { user_id: userID, device_id: device, email });
  sessionStorage.setItem('token', out.token);
  sessionStorage.setItem('user', userID);
}

// keepSession keeps a signed-in fan's token and display name for this tab,
// as signIn does (the OpenID Connect redirect sign-in, signin.js).
export function keepSession(tok, user) {
  sessionStorage.setItem('token', tok);
  sessionStorage.setItem('user', user);
}

export function signOut() { sessionStorage.removeItem('token'); sessionStorage.removeItem('user'); }
