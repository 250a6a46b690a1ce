// Ticket transfers in the fan app: send a ticket to someone by email from
// "My tickets", withdraw it until it is accepted, and accept one sent to
// you (the email's link opens #/transfer/<id>). The server hands the
// recipient a new ticket with new codes; the sender's stops working.
import { get, post, request, newKey, ProblemError } from './api.js';
import { message } from './problems.js';
import { esc } from './orders.js';
import { t, locale } from './i18n.js';

// mine is the signed-in fan's transfers, sent and received.
export async function mine() {
  return (await get('/v1/me/transfers')).transfers;
}

const until = d => new Date(d).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short' });

// sendControls adds to a ticket's entry in "My tickets" a way to send it
// to someone, or the pending offer with a way to withdraw it. done is
// called after a change (the page reloads its list).
export function sendControls(li, ticketID, pending, done) {
  const box = document.createElement('div');
  box.className = 'transfer';
  box.dataset.ticket = ticketID;
  li.append(box);
  const offered = x => {
    box.innerHTML = `<p class="note" data-transfer="${esc(x.transfer_id)}" data-status="PENDING">${t('Sent to {email}, waiting for them to accept (until {date}). The ticket stays yours until then.',
      { email: `<strong>${esc(x.to_email)}</strong>`, date: esc(until(x.expires_at)) })}</p>
      <button class="secondary" type="button">${t('Withdraw')}</button>`;
    box.querySelector('button').onclick = async e => {
      e.target.disabled = true;
      try { await request('DELETE', '/v1/transfers/' + encodeURIComponent(x.transfer_id)); done(t('Transfer withdrawn')); }
      catch (err) { e.target.disabled = false; say(err); }
    };
  };
  const say = err => {
    let p = box.querySelector('.problem-inline');
    if (!p) { p = document.createElement('p'); p.className = 'problem-inline'; p.setAttribute('role', 'alert'); box.append(p); }
    p.textContent = err instanceof ProblemError ? message(err.problem, err.retryAfter) : t('Could not send it. Please try again.');
  };
  if (pending) { offered(pending); return; }
  box.innerHTML = `<details><summary>${t('Send this ticket to someone')}</summary>
    <form class="sendform" novalidate><label>${t('Their email address')} <input name="to" type="email" autocomplete="email" required></label>
    <button type="submit">${t('Send ticket')}</button>
    <p class="note">${t('They accept it signed in with that address and get a new ticket; this one then stops working.')}</p></form></details>`;
  box.querySelector('form').onsubmit = async e => {
    e.preventDefault();
    const btn = e.target.querySelector('button'); btn.disabled = true;
    try {
      const x = await post(`/v1/tickets/${encodeURIComponent(ticketID)}/transfer`, { to_email: e.target.to.value.trim() }, newKey());
      offered(x); done(t('Ticket sent to {email}', { email: x.to_email }));
    } catch (err) { btn.disabled = false; say(err); }
  };
}

// receivedList shows the transfers waiting for the fan to accept, each
// with an Accept button, above the tickets; accept reloads the page.
export function receivedList(main, list, done) {
  const waiting = list.filter(x => x.direction === 'received' && x.status === 'PENDING');
  if (!waiting.length) return;
  const box = document.createElement('section');
  box.className = 'received'; box.setAttribute('aria-label', t('Tickets sent to you'));
  box.innerHTML = `<h2>${t('Tickets sent to you')}</h2>` + waiting.map(x => `<p data-transfer="${esc(x.transfer_id)}">
    ${t('A ticket for {event}, until {date}.', { event: esc(x.event_id), date: esc(until(x.expires_at)) })} <button type="button">${t('Accept')}</button></p>`).join('');
  for (const b of box.querySelectorAll('button')) {
    b.onclick = () => accept(b.parentElement.dataset.transfer, b, done);
  }
  main.insertBefore(box, main.querySelector('#tickets'));
}

async function accept(id, btn, done) {
  btn.disabled = true;
  try { await post(`/v1/transfers/${encodeURIComponent(id)}/accept`, {}, newKey()); done(t('Ticket accepted: it is in My tickets')); }
  catch (err) {
    btn.disabled = false;
    const p = document.createElement('p'); p.className = 'problem-inline'; p.setAttribute('role', 'alert');
    p.textContent = err instanceof ProblemError ? message(err.problem, err.retryAfter) : t('Could not accept it. Please try again.');
    btn.after(p);
  }
}

// TRANSFER_STATUS says a closed transfer's state in words.
const TRANSFER_STATUS = { DECLINED: 'declined', WITHDRAWN: 'withdrawn', EXPIRED: 'expired', CANCELLED: 'cancelled' };

// transferView is #/transfer/<id>, where the email's link lands: the
// transfer and its Accept button, or why it cannot be accepted.
export async function transferView(main, id, signedIn) {
  main.innerHTML = `<h1>${t('A ticket for you')}</h1><div id="transfer"></div>`;
  const box = main.querySelector('#transfer');
  if (!signedIn) { box.innerHTML = `<p>${t('Sign in with the email address the ticket was sent to, then open this page again.')}</p>`; return; }
  const x = (await mine()).find(tr => tr.transfer_id === id);
  if (!x || x.direction !== 'received') {
    box.innerHTML = `<p>${t('This transfer is not addressed to you. Sign in with the email address it was sent to.')}</p>`; return;
  }
  if (x.status !== 'PENDING') {
    box.innerHTML = `<p data-status="${esc(x.status)}">${x.status === 'ACCEPTED' ? t('You accepted this ticket: it is in {link}.', { link: `<a href="#/tickets">${t('My tickets')}</a>` })
      : t('This transfer is no longer open ({status}).', { status: esc(t(TRANSFER_STATUS[x.status] || x.status.toLowerCase())) })}</p>`;
    return;
  }
  box.innerHTML = `<p data-status="PENDING">${t('A ticket for {event} was sent to {email}. Accept it by {date}.', { event: esc(x.event_id), email: esc(x.to_email), date: esc(until(x.expires_at)) })}</p>
    <button type="button" id="accept">${t('Accept the ticket')}</button>`;
  const btn = box.querySelector('#accept');
  btn.onclick = () => accept(id, btn, () => { location.hash = '#/tickets'; });
}
