// Fan-to-fan resale in the fan app: sell a ticket from "My tickets" at a
// price up to the organiser's cap (and withdraw it until a buyer pays),
// buy another fan's ticket from the event's resale page (#/event/<id>/resale:
// an ordinary hold, paid on the hold page like seats), and follow one's
// listings and their payouts (#/listings). The server moves a sold ticket
// to the buyer with new codes and pays the seller back on their card.
import { get, post, request, newKey, ProblemError } from './api.js';
import { message } from './problems.js';
import { esc, when } from './orders.js';
import { money } from './seatmap.js';
import { t, locale } from './i18n.js';

// mine is the signed-in fan's listings, newest first; null when resale is
// not served (the page then offers no Sell control).
export async function mine() {
  try { return (await get('/v1/me/listings')).listings; } catch { return null; }
}

const at = d => new Date(d).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short' });

// digits is how many minor units a currency's major unit has (2 for EUR).
function digits(currency) {
  try { return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits; } catch { return 2; }
}

// minor reads a price typed as "40", "40.5" or "40,50" in minor units, or
// null when it is not a positive amount.
function minor(text, currency) {
  const d = digits(currency || 'EUR');
  const s = String(text).trim().replace(',', '.');
  if (!new RegExp(`^\\d{1,7}(\\.\\d{0,${d}})?$`).test(s)) return null;
  const [whole, frac = ''] = s.split('.');
  const n = Number(whole) * 10 ** d + Number((frac + '0'.repeat(d)).slice(0, d) || 0);
  return n > 0 ? n : null;
}

// major writes minor units as the price field shows them, in the fan's
// language ("40.00", in Dutch "40,00"): minor reads either back.
const major = m => (m.amount / 10 ** digits(m.currency)).toLocaleString(locale(),
  { minimumFractionDigits: digits(m.currency), maximumFractionDigits: digits(m.currency), useGrouping: false });

// inline shows a problem under a control (replacing the last one).
function inline(box, err, fallback) {
  let p = box.querySelector('.problem-inline');
  if (!p) { p = document.createElement('p'); p.className = 'problem-inline'; p.setAttribute('role', 'alert'); box.append(p); }
  p.textContent = err instanceof ProblemError ? message(err.problem, err.retryAfter) : fallback;
  return p;
}

// payoutLine says what the seller receives of a listing's price.
const payoutLine = l => l.payout ? t('When it sells you receive {amount}', { amount: `<strong>${money(l.payout)}</strong>` }) +
  (l.fee ? ' ' + t('(the price less a fee of {fee})', { fee: money(l.fee) }) : '') + '.' : '';

// sellControls adds to a valid ticket's entry in "My tickets" a way to list
// it for resale: a price, prefilled with what the fan paid when the ticket's
// booking says, and what the fan receives once listed. A price above the
// organiser's cap is refused naming the cap, on the field. done is called
// after a change (the page reloads its list).
export function sellControls(li, ticket, done) {
  const box = document.createElement('div');
  box.className = 'resale';
  box.dataset.ticket = ticket.id;
  li.append(box);
  const fid = 'sellprice-' + ticket.id, eid = 'sellerr-' + ticket.id;
  box.innerHTML = `<details><summary>${t('Sell this ticket')}</summary>
    <form class="sellform" novalidate><label for="${esc(fid)}">${t('Resale price')} <span class="cur"></span></label>
    <input id="${esc(fid)}" name="price" inputmode="decimal" autocomplete="off" required aria-describedby="${esc(eid)}">
    <button type="submit">${t('List for resale')}</button>
    <p class="note">${t("Another fan buys it at this price, up to the organiser's cap. Until then you can withdraw it; while it is listed it does not open the door. Once sold we pay you back on your card, less a fee.")}</p>
    <p class="problem-inline" id="${esc(eid)}" role="alert" hidden></p></form></details>`;
  const form = box.querySelector('form'), input = form.price, err = form.querySelector('.problem-inline');
  let currency = '', looked = false;
  const setCurrency = c => { currency = c; box.querySelector('.cur').textContent = c ? `(${c})` : ''; };
  // The face value is the ticket's line in its booking, read once when
  // the fan opens the form.
  box.querySelector('details').addEventListener('toggle', async e => {
    if (!e.target.open || looked || !ticket.booking_id) return;
    looked = true;
    const b = await get('/v1/bookings/' + encodeURIComponent(ticket.booking_id)).catch(() => null);
    const it = b && (b.items || []).find(i => ticket.seat_id ? i.seat_id === ticket.seat_id : i.section_id === ticket.section_id);
    if (!it) return;
    setCurrency(it.price.currency);
    if (!input.value) input.value = major(it.price);
    form.dataset.face = String(it.price.amount);
  });
  const refuse = text => { input.setAttribute('aria-invalid', 'true'); err.textContent = text; err.hidden = false; input.focus(); };
  form.onsubmit = async e => {
    e.preventDefault();
    err.hidden = true; err.textContent = ''; input.removeAttribute('aria-invalid');
    const amount = minor(input.value, currency);
    if (amount === null) { refuse(t('Enter a price such as {example}.', { example: (40).toLocaleString(locale(), { minimumFractionDigits: 2 }) })); return; }
    const btn = form.querySelector('button'); btn.disabled = true;
    try {
      const l = await post(`/v1/tickets/${encodeURIComponent(ticket.id)}/listings`,
        { price: { amount, ...(currency ? { currency } : {}) } }, newKey());
      box.innerHTML = `<p class="note" data-listing="${esc(l.listing_id)}" data-status="${esc(l.status)}">${t('Listed for resale at {price}.', { price: `<strong>${money(l.price)}</strong>` })} ${payoutLine(l)}</p>`;
      done(t('Listed for resale at {price}.', { price: money(l.price) }));
    } catch (x) {
      btn.disabled = false;
      if (x instanceof ProblemError && [422, 400].includes(x.status) && (x.problem.errors || []).some(f => f.field.startsWith('price'))) {
        refuse(message(x.problem, x.retryAfter));
      } else {
        err.textContent = x instanceof ProblemError ? message(x.problem, x.retryAfter) : t('Could not list it. Please try again.');
        err.hidden = false;
      }
    }
  };
}

// listedControls fills a listed ticket's entry in "My tickets": its price,
// what the fan receives, and a Withdraw button (refused while a buyer is
// paying for it).
export function listedControls(li, listing, done) {
  const box = document.createElement('div');
  box.className = 'resale';
  li.append(box);
  if (!listing) { box.innerHTML = `<p class="note" data-status="ACTIVE">${t('Listed for resale. See {link}.', { link: `<a href="#/listings">${t('My listings')}</a>` })}</p>`; return; }
  box.dataset.listing = listing.listing_id;
  box.innerHTML = `<p class="note" data-listing="${esc(listing.listing_id)}" data-status="ACTIVE">${t('Listed for resale at {price} until {date}.', { price: `<strong>${money(listing.price)}</strong>`, date: esc(at(listing.closes_at)) })} ${payoutLine(listing)}
    ${t('It does not open the door while it is listed.')}</p>
    <button class="secondary" type="button">${t('Withdraw')}<span class="sr-only"> ${esc(t('the listing of {what}', { what: listing.label }))}</span></button>`;
  const btn = box.querySelector('button');
  btn.onclick = async () => {
    btn.disabled = true;
    try { await request('DELETE', '/v1/listings/' + encodeURIComponent(listing.listing_id)); done(t('Listing withdrawn: the ticket is yours to use again')); }
    catch (x) { btn.disabled = false; inline(box, x, t('Could not withdraw it. Please try again.')); }
  };
}

// eventView is #/event/<id>/resale: the event's tickets other fans resell,
// cheapest first, each with a Buy button that holds it and opens the hold's
// payment page, as seats do.
export async function eventView(main, id, { signedIn, showProblem, clearProblem, here }) {
  const ev = await get('/v1/events/' + encodeURIComponent(id));
  if (!here()) return; // the fan went on: their page stays as it is
  main.innerHTML = `<h1>${t('Resale tickets')}</h1><p><a href="#/event/${encodeURIComponent(id)}"><strong>${esc(ev.title)}</strong></a> ·
    ${esc(ev.venue)}, ${esc(ev.city)} · <span class="when">${esc(when(ev.starts_at, ev.timezone, ev.city))}</span></p>
    <p class="note">${t("Tickets other fans cannot use, sold at no more than the organiser allows. You pay on the next page as for any seats; your ticket gets new codes and the seller's stops working.")}</p>
    <ul class="bookings listings" id="listings" aria-live="polite"></ul>`;
  const ul = main.querySelector('#listings');
  if (!signedIn) { ul.innerHTML = `<li>${t('Sign in to see and buy resale tickets.')}</li>`; return; }
  const load = async () => {
    let ls;
    try { ls = (await get('/v1/events/' + encodeURIComponent(id) + '/listings')).listings; } catch (x) {
      if (!(x instanceof ProblemError) || x.status >= 500) throw x;
      ul.innerHTML = `<li data-closed="yes">${esc(message(x.problem, x.retryAfter))}</li>`;
      return;
    }
    if (!ul.isConnected) return;
    if (!ls.length) { ul.innerHTML = `<li id="nolistings">${t('No tickets on resale right now. Check again later.')}</li>`; return; }
    ul.innerHTML = ls.map(l => {
      const others = l.offered_until && !l.offered_to_you && new Date(l.offered_until) > Date.now();
      const first = l.offered_until && l.offered_to_you ? `<p class="note offered">${t('Offered to you first until {date}.', { date: esc(at(l.offered_until)) })}</p>`
        : others ? `<p class="note">${t('Offered first to a fan on the waitlist until {date}.', { date: esc(at(l.offered_until)) })}</p>` : '';
      return `<li data-listing="${esc(l.listing_id)}"><h2>${esc(l.label)}</h2>
        <p><strong>${money(l.price)}</strong> · ${t('face value {price}', { price: money(l.face_value) })}</p>${first}
        <button type="button" ${others ? 'disabled' : ''}>${t('Buy')}<span class="sr-only"> ${esc(l.label)}</span> ${t('for {price}', { price: money(l.price) })}</button></li>`;
    }).join('');
    for (const b of ul.querySelectorAll('button')) b.onclick = () => buy(b.closest('li').dataset.listing, b);
  };
  const buy = async (lid, btn) => {
    btn.disabled = true;
    try {
      const h = await post('/v1/holds', { event_id: id, listing_ids: [lid] }, newKey());
      clearProblem(); location.hash = '#/hold/' + encodeURIComponent(h.hold_id);
    } catch (x) {
      btn.disabled = false;
      showProblem(x);
      if (x instanceof ProblemError && String(x.problem.type).endsWith('/listing-unavailable')) load().catch(showProblem);
    }
  };
  await load();
}

const STATUS = {
  ACTIVE: 'On sale', SOLD: 'Sold', WITHDRAWN: 'Withdrawn', EXPIRED: 'Expired: resale closed before it sold',
};

// payoutText says where a sold listing's money went: back to the seller's
// card, owed to them, or still on its way.
function payoutText(l) {
  const p = l.payout;
  if (!p) return '';
  if (l.status !== 'SOLD') return l.status === 'ACTIVE' ? payoutLine(l) : '';
  const m = a => money({ amount: a, currency: p.currency });
  if (p.status === 'PENDING') return t('You receive {amount}: the payout is on its way.', { amount: `<strong>${m(p.amount)}</strong>` });
  const parts = [];
  if (p.refunded) parts.push(t('{amount} refunded to your card', { amount: `<strong>${m(p.refunded)}</strong>` }));
  if (p.owed) parts.push(t('{amount} owed to you (we pay it to you separately)', { amount: `<strong>${m(p.owed)}</strong>` }));
  return t('Payout {amount}: {parts}.', { amount: m(p.amount), parts: parts.join(', ') || t('nothing due') });
}

// listingsView is #/listings, "My listings": each listing's place, state,
// price and payout.
export async function listingsView(main, signedIn) {
  main.innerHTML = `<h1>${t('My listings')}</h1><div id="mylistings" aria-live="polite"><p>${t('Loading…')}</p></div>`;
  const box = main.querySelector('#mylistings');
  if (!signedIn) { box.innerHTML = `<p>${t('Sign in to see the tickets you listed for resale.')}</p>`; return; }
  const ls = (await get('/v1/me/listings')).listings;
  if (!ls.length) { box.innerHTML = `<p>${t('You have not listed a ticket for resale. Sell one from {link}.', { link: `<a href="#/tickets">${t('My tickets')}</a>` })}</p>`; return; }
  const titles = new Map();
  await Promise.all([...new Set(ls.map(l => l.event_id))].map(async e => {
    const ev = await get('/v1/events/' + encodeURIComponent(e)).catch(() => null);
    titles.set(e, ev ? ev.title : e);
  }));
  box.innerHTML = '<ul class="bookings listings">' + ls.map(l => `<li data-listing="${esc(l.listing_id)}" data-status="${esc(l.status)}">
    <h2>${esc(l.label)}</h2><p>${esc(titles.get(l.event_id))}</p>
    <p><span class="status">${esc(STATUS[l.status] ? t(STATUS[l.status]) : l.status)}</span> · ${money(l.price)}${l.fee ? ` · ${t('fee {fee}', { fee: money(l.fee) })}` : ''}</p>
    <p class="payout">${payoutText(l)}</p></li>`).join('') + '</ul>';
}
