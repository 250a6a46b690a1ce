// Helpers the organiser views share: escaping, the problem banner, the
// live region, money in minor units, times, and a fetch for bodies that are
// not JSON (a CSV layout, a CSV report).
import { ProblemError, OfflineError, token } from '/app/api.js';
import { message } from '/app/problems.js';
import { t, locale } from '/app/i18n.js';

export const main = document.getElementById('main');
const banner = document.getElementById('problem');
const announcer = document.getElementById('announce');

// navigation counts the router's renders (each app's route calls
// navigate()). A view takes the count as it starts (const here = current())
// and, after every await, draws only while here() still holds: a view the
// user has already left returns without drawing (nor drawing anything
// again), so the page they went to, and what they typed or chose on it,
// stays as it is. A view that fails after they moved on shows no error.
let navigation = 0;
export const navigate = () => { navigation++; return current(); };
export const current = () => { const n = navigation; return () => n === navigation; };

export const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

export function announce(text) { announcer.textContent = ''; setTimeout(() => { announcer.textContent = text; }, 20); }

// explain is a sentence an organiser can act on. The fan app's messages
// cover most problems; a conflict or a refusal says what the server said,
// which names the seat, the code or the field.
export function explain(err) {
  if (err instanceof OfflineError) return t(err.message);
  // A browser's own error ("Failed to fetch", a script's TypeError) is not
  // for people: they read what to do instead.
  if (!(err instanceof ProblemError)) {
    if (!(err instanceof Error) || err instanceof TypeError || err instanceof SyntaxError || err instanceof RangeError ||
      (typeof DOMException !== 'undefined' && err instanceof DOMException)) return t('Something went wrong on this page. Please try again.');
    return t(err.message);
  }
  const p = err.problem, name = String(p.type || '').replace(/^.*\/problems\//, '');
  switch (name) {
    case 'conflict': return t('This cannot change now: {why}.', { why: p.detail || p.title || t('the event is past that stage') });
    case 'forbidden': return t('You are not allowed to do this') + (p.detail ? ': ' + p.detail : '') + '. ' + t("Sign in as an organiser of this event's organisation.");
    case 'unauthorized': return t('Please sign in as an organiser first.');
    case 'not-found': return t('We could not find that. It may belong to another organisation, or the link is out of date.');
    case 'invalid-request': return t('Please correct the highlighted fields.') + ((p.errors || []).length ? '' : ' ' + (p.detail || ''));
    default: return message(p, err.retryAfter);
  }
}

export function clearProblem() { banner.hidden = true; banner.textContent = ''; delete banner.dataset.type; }

export function showProblem(err) {
  banner.textContent = explain(err);
  banner.dataset.type = err instanceof ProblemError ? String(err.problem.type || '') : 'error';
  banner.hidden = false;
}

// fieldErrors lists an invalid-request's errors (JSON paths, CSV lines) in
// box, marks the form's inputs they name as invalid, and focuses the list.
export function fieldErrors(box, err, form) {
  const list = err instanceof ProblemError && err.problem.errors || [];
  if (form) for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  if (!list.length) { box.hidden = true; box.innerHTML = ''; return false; }
  box.innerHTML = `<h3>${list.length === 1 ? t('One problem to fix') : t('{n} problems to fix', { n: list.length })}</h3>
    <ul>${list.map(e => `<li><code>${esc(e.field)}</code>: ${esc(e.message)}</li>`).join('')}</ul>`;
  box.hidden = false;
  // A field is marked by its name, or its parent's (prices.vip.amount marks
  // the input prices.vip).
  if (form) for (const e of list) {
    for (let f = e.field; f; f = f.includes('.') ? f.slice(0, f.lastIndexOf('.')) : '') {
      const el = form.querySelector(`[name="${CSS.escape(f)}"]`);
      if (el) { el.setAttribute('aria-invalid', 'true'); break; }
    }
  }
  box.focus();
  return true;
}

// digits is how many minor units a currency's major unit has (2 for EUR,
// 0 for JPY), as the browser's currency data says.
export function digits(currency) {
  try { return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits; }
  catch { return 2; }
}

// money formats an amount in minor units of currency.
export function money(amount, currency) {
  const n = Number(amount || 0) / 10 ** digits(currency);
  try { return new Intl.NumberFormat(locale(), { style: 'currency', currency }).format(n); }
  catch { return n.toFixed(2) + ' ' + currency; }
}

// minor turns a major-unit amount typed by a person into minor units.
export const minor = (text, currency) => Math.round(Number(text) * 10 ** digits(currency));


// An event's times are typed and shown on its venue's clocks (its IANA
// zone), whatever the organiser's browser is set to: 20:00 in Amsterdam is
// typed 20:00 from New York too.

// zoneOffset is zone's offset from UTC at the instant ms, in ms.
function zoneOffset(ms, zone) {
  const p = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric',
    month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
    .formatToParts(new Date(ms)).map(x => [x.type, x.value]));
  return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - Math.floor(ms / 1000) * 1000;
}

// localInput is a time as a datetime-local input's value on zone's clocks.
export function localInput(t, zone = 'UTC') {
  const ms = new Date(t).getTime();
  return new Date(ms + zoneOffset(ms, zone)).toISOString().slice(0, 16);
}

// isoOf reads a datetime-local value typed on zone's clocks back as an
// RFC 3339 instant (the offset at that very instant: right across a
// daylight-saving change).
export function isoOf(v, zone = 'UTC') {
  if (!v) return undefined;
  const [y, mo, d, h, mi] = v.split(/[-T:]/).map(Number);
  const wall = Date.UTC(y, mo - 1, d, h, mi);
  return new Date(wall - zoneOffset(wall - zoneOffset(wall, zone), zone)).toISOString();
}

// whenIn is a time on zone's clocks, the zone named.
export const whenIn = (at, zone) => at ? new Intl.DateTimeFormat(locale(), { timeZone: zone || 'UTC', dateStyle: 'medium',
  timeStyle: 'short' }).format(new Date(at)) + ` (${zone || 'UTC'})` : '—';

// send is a request whose body is text of the given type (a CSV layout).
export async function send(method, path, text, type) {
  const res = await fetch(path, { method, body: text, headers: { 'Content-Type': type, ...(token() ? { Authorization: 'Bearer ' + token() } : {}) } });
  const data = (res.headers.get('Content-Type') || '').includes('json') ? await res.json().catch(() => ({})) : null;
  if (!res.ok) throw new ProblemError(data && data.type ? data : { type: 'about:blank', title: 'HTTP ' + res.status }, res.status, res.headers.get('Retry-After'));
  return data;
}

// download saves a protected resource (the token cannot ride on a plain
// link) as a file.
export async function download(path, name) {
  const res = await fetch(path, { headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
  if (!res.ok) throw new ProblemError(await res.json().catch(() => ({})), res.status, res.headers.get('Retry-After'));
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a'); a.href = url; a.download = name; document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// STATUS_TEXT describes an event's status in words (the badge's colour is
// never the only sign).
export const STATUS_TEXT = { DRAFT: 'Draft', PUBLISHED: 'Published', ON_SALE: 'On sale', OFF_SALE: 'Off sale', CANCELLED: 'Cancelled' };
export const badge = s => `<span class="badge badge-${esc(String(s).toLowerCase())}" data-status="${esc(s)}">${esc(STATUS_TEXT[s] ? t(STATUS_TEXT[s]) : s)}</span>`;

// errorView replaces the page that could not be shown with what went wrong
// and a way on: the previous page never stays on screen under an error
// about another (the banner says it too, for the screen reader's alert).
// retry shows the page again; home is where "back" goes.
export function errorView(err, retry, home = ['#/', t('Back to your events')]) {
  console.error(err); // people read words; a developer's console keeps the cause
  main.dataset.error = String(err && err.stack || err).slice(0, 500);
  main.innerHTML = `<h1>${t('We could not show this page')}</h1><p id="errtext"></p>
    <p class="actions"><button id="retry">${t('Try again')}</button> <a class="button secondary" href="${esc(home[0])}">${esc(home[1])}</a></p>`;
  main.querySelector('#errtext').textContent = explain(err);
  main.querySelector('#retry').onclick = () => { clearProblem(); delete main.dataset.error; retry(); };
  showProblem(err);
}

// labelCells names each body cell of a list table by its column's heading
// (data-label): on a phone the table reads as one card a row, each value
// under its name, so no column is cut off at the screen's edge.
export function labelCells(table) {
  const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
  for (const tr of table.querySelectorAll('tbody tr, tfoot tr')) {
    [...tr.children].forEach((cell, i) => { if (heads[i] && !cell.hasAttribute('colspan')) cell.dataset.label = heads[i]; });
  }
  table.classList.add('cardrows');
}
