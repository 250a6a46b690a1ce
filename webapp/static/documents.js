// A booking's documents: its invoice, and its credit note once refunded,
// as PDF. A link cannot carry the bearer token, so each is fetched with it
// and opened from a blob URL (kept until the page is left).
import { token, ProblemError, OfflineError } from './api.js';
import { message } from './problems.js';
import { esc } from './orders.js';
import { t } from './i18n.js';

// fetchDocument fetches a protected file: {url (a blob URL), type, name}.
export async function fetchDocument(path) {
  let res;
  try { res = await fetch(path, { headers: token() ? { Authorization: 'Bearer ' + token() } : {} }); }
  catch { throw new OfflineError(); }
  if (!res.ok) {
    const p = await res.json().catch(() => ({}));
    throw new ProblemError(p && p.type ? p : { type: 'about:blank', title: 'HTTP ' + res.status }, res.status, res.headers.get('Retry-After'));
  }
  const type = res.headers.get('Content-Type') || '';
  const name = ((res.headers.get('Content-Disposition') || '').match(/filename="?([^";]+)"?/) || [])[1] || path.split('/').pop();
  return { url: URL.createObjectURL(await res.blob()), type, name };
}

// DOCS are a booking's documents by kind: their path, button and link.
const DOCS = {
  invoice: { file: 'invoice.pdf', label: 'Invoice (PDF)', fetching: 'Fetching your invoice…', opened: 'Your invoice opened in a new tab.', ready: 'Your invoice is ready.' },
  'credit-note': { file: 'credit-note.pdf', label: 'Credit note (PDF)', fetching: 'Fetching your credit note…', opened: 'Your credit note opened in a new tab.', ready: 'Your credit note is ready.' },
};

// documentsBox is a paid (or refunded) booking's documents section, or
// null when it has none; cleanup takes the blob URLs' release.
export function documentsBox(b, cleanup) {
  const paid = ['PAID', 'DISPUTED', 'CHARGED_BACK'].includes(b.status);
  const kinds = b.status === 'REFUNDED' ? ['invoice', 'credit-note'] : paid ? ['invoice'] : [];
  if (!kinds.length) return null;
  const box = document.createElement('section');
  box.className = 'documents'; box.setAttribute('aria-labelledby', 'docshead');
  box.innerHTML = `<h2 id="docshead">${t(kinds.length > 1 ? 'Invoice and credit note' : 'Invoice')}</h2>
    <p class="row">${kinds.map(k => `<button type="button" class="secondary" id="${k}btn" data-doc="${k}">${t(DOCS[k].label)}</button>`).join(' ')}</p>
    <p class="note" id="docstate" role="status"></p>`;
  const state = box.querySelector('#docstate');
  const urls = [];
  cleanup.push(() => urls.forEach(u => URL.revokeObjectURL(u)));
  box.addEventListener('click', async e => {
    const btn = e.target.closest('button[data-doc]'); if (!btn) return;
    const d = DOCS[btn.dataset.doc];
    btn.disabled = true; state.textContent = t(d.fetching);
    try {
      const doc = await fetchDocument(`/v1/bookings/${encodeURIComponent(b.booking_id)}/${d.file}`);
      urls.push(doc.url);
      const tab = window.open(doc.url, '_blank');
      state.innerHTML = `${t(tab ? d.opened : d.ready)}
        <a id="${btn.dataset.doc}link" href="${esc(doc.url)}" target="_blank" data-type="${esc(doc.type)}" data-name="${esc(doc.name)}">${esc(t('Open {name}', { name: doc.name }))}</a>`;
    } catch (err) {
      state.textContent = err instanceof ProblemError ? message(err.problem, err.retryAfter)
        : err instanceof TypeError ? t('We could not fetch the document. Check your connection and try again.') : err.message;
    } finally { btn.disabled = false; }
  });
  return box;
}
