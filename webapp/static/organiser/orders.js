// An event's orders: every booking with its buyer, places by their labels,
// total and paid time on the venue's clocks, found by e-mail, booking ID or
// seat as the organiser types, and downloaded as CSV (neutralised by the
// server's csvsafe, the same search applied).
import { get } from '/app/api.js';
import { esc, announce, clearProblem, showProblem, money, whenIn, download, labelCells } from './ui.js';
import { t, plural } from '/app/i18n.js';

// ORDER_STATUS names a booking's status in words; the badge's mark and
// border tell them apart without colour.
export const ORDER_STATUS = { PAID: 'Paid', PENDING_PAYMENT: 'Awaiting payment', CANCELLED: 'Cancelled', EXPIRED: 'Hold lapsed' };

const orderBadge = o => {
  const refunded = o.status === 'CANCELLED' && o.payment_status === 'REFUNDED';
  const text = refunded ? t('Cancelled, refunded') : t(ORDER_STATUS[o.status] || o.status);
  return `<span class="badge badge-${esc(o.status.toLowerCase())}" data-status="${esc(o.status)}">${esc(text)}</span>`;
};

// SEARCH_PAUSE is how long typing rests before the search runs.
const SEARCH_PAUSE = 250;

export async function ordersPage(page, ev, ctx) {
  const path = '/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/orders';
  page.innerHTML = `<h2>${t('Orders')}</h2>
    <p id="ordersummary" class="summary"></p>
    <form id="ordersearch" class="row" role="search" aria-label="${t('Search the orders')}">
      <label>${t('E-mail, booking ID or seat')} <input type="search" name="q" id="orderq" maxlength="200" autocomplete="off"></label>
      <label>${t('Status')} <select name="status" id="orderstatus"><option value="">${t('Every order')}</option>
        ${Object.entries(ORDER_STATUS).map(([v, l]) => `<option value="${v}">${t(l)}</option>`).join('')}</select></label>
      <button class="secondary" id="orderfind">${t('Search')}</button>
    </form>
    <p class="row"><span id="ordercount" aria-live="polite"></span>
      <button type="button" class="secondary" id="orderscsv">${t('Download these orders as CSV')}</button></p>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Orders')}"><table class="list" id="orders">
      <caption>${t('Bookings of this event, newest first; times on the venue\'s clocks ({zone})', { zone: esc(ev.timezone || 'UTC') })}</caption>
      <thead><tr><th scope="col">${t('Booking')}</th><th scope="col">${t('Buyer')}</th><th scope="col">${t('Places')}</th>
        <th scope="col">${t('Total')}</th><th scope="col">${t('Status')}</th><th scope="col">${t('Paid at')}</th></tr></thead>
      <tbody></tbody></table></div>`;
  const f = page.querySelector('#ordersearch'), body = page.querySelector('#orders tbody'), count = page.querySelector('#ordercount');
  const query = () => {
    const q = new URLSearchParams();
    if (f.q.value.trim()) q.set('q', f.q.value.trim());
    if (f.status.value) q.set('status', f.status.value);
    return q.toString();
  };
  let seq = 0;
  const load = async () => {
    const my = ++seq, qs = query();
    const o = await get(path + (qs ? '?' + qs : ''));
    if (my !== seq) return; // a later search answered first
    const s = o.summary;
    page.querySelector('#ordersummary').textContent = plural(s.paid_bookings, '{n} paid booking', '{n} paid bookings') + ', ' +
      money(s.paid_total, ev.currency) + '; ' + plural(s.valid_tickets, '{n} valid ticket', '{n} valid tickets') + '.';
    body.innerHTML = o.orders.map(b => `<tr data-booking="${esc(b.booking_id)}">
      <th scope="row"><code title="${esc(b.booking_id)}">${esc(b.booking_id.slice(0, 8))}</code></th>
      <td data-field="email">${esc(b.email) || '—'}</td>
      <td data-field="places"><ul class="plain">${b.items.map(it => `<li>${esc(it.label)}${it.quantity > 1 ? ' × ' + it.quantity : ''}</li>`).join('')}</ul></td>
      <td data-field="total" data-minor="${b.total}">${money(b.total, b.currency)}</td>
      <td>${orderBadge(b)}</td>
      <td data-field="paid_at">${b.paid_at ? esc(whenIn(b.paid_at, ev.timezone)) : '—'}</td></tr>`).join('')
      || `<tr><td colspan="6">${qs ? t('No order matches this search.') : t('No orders yet.')}</td></tr>`;
    labelCells(page.querySelector('#orders'));
    count.textContent = plural(o.matching, '{n} order shown', '{n} orders shown');
  };
  let timer;
  ctx.cleanup.push(() => { clearTimeout(timer); seq++; });
  const search = () => load().then(clearProblem, showProblem);
  f.q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(search, SEARCH_PAUSE); });
  f.status.onchange = search;
  f.onsubmit = e => { e.preventDefault(); clearTimeout(timer); search(); };
  page.querySelector('#orderscsv').onclick = () => {
    const qs = query();
    download(path + '?' + (qs ? qs + '&' : '') + 'format=csv', `orders-${ev.event_id}.csv`)
      .then(() => announce(t('The orders are downloading as CSV')), showProblem);
  };
  await load();
}
