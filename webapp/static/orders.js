// What a fan has bought, as people read it: event times in the venue's own
// time zone (where the fan will be), seats by their labels, each booking's
// state in words, and the list of the fan's bookings.
import { money } from './seatmap.js';
import { t, locale } from './i18n.js';
import { stayLines, stayTotal, stayNames, nightDate } from './hotels.js';

export const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const viewerZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

// clock is an instant's date and time on the wall clocks of zone.
const clock = (d, zone) => new Intl.DateTimeFormat('en-GB', { timeZone: zone, dateStyle: 'short', timeStyle: 'short' }).format(d);

// when writes an instant in the venue's zone, labelled with the zone and
// the city ("Fri 12 Mar 2027, 21:00 CET, Amsterdam time"), and the viewer's
// own time beside it when their clocks read otherwise: a show at 21:00 in
// Amsterdam is not "3:00 PM" to a fan reading in New York.
export function when(iso, zone, city) {
  const d = new Date(iso);
  zone = zone || 'UTC';
  let venue;
  try {
    venue = new Intl.DateTimeFormat(locale(), { timeZone: zone, weekday: 'short', day: 'numeric', month: 'short',
      year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(d);
  } catch { // a zone this browser does not know: UTC, said so
    zone = 'UTC';
    venue = new Intl.DateTimeFormat(locale(), { timeZone: 'UTC', dateStyle: 'medium', timeStyle: 'short' }).format(d) + ' UTC';
  }
  let out = venue + (city ? ', ' + t('{city} time', { city }) : '');
  if (clock(d, zone) !== clock(d, viewerZone())) {
    out += ` (${t('{time} your time', { time: new Intl.DateTimeFormat(locale(), { weekday: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(d) })})`;
  }
  return out;
}

// STATUS says each booking status in words, with what it means for the fan.
export const STATUS = {
  PENDING_PAYMENT: 'Waiting for your payment',
  AUTHORISED: 'Payment authorised, confirming your seats',
  PAID: 'Paid',
  CANCELLED: 'Cancelled',
  REFUNDED: 'Cancelled and refunded',
  EXPIRED: 'Expired: the hold ran out before payment',
  FAILED: 'Payment failed: nothing was charged',
  DISPUTED: 'Paid, the payment is disputed with your bank',
  CHARGED_BACK: 'Charged back by your bank: the tickets are void',
};
export const statusText = s => STATUS[s] ? t(STATUS[s]) : s;

// eventLine is the booked event's title, time and venue.
export function eventLine(ev) {
  if (!ev) return '';
  return `<p class="event"><strong>${esc(ev.title)}</strong><br><span class="when">${esc(when(ev.starts_at, ev.timezone, ev.venue && ev.venue.city))}</span><br>
    ${esc(ev.venue ? `${ev.venue.name}, ${ev.venue.city}` : '')}</p>`;
}

// typeName is a ticket type's name among the event's types (its ID when
// the event's page could not be read).
const typeName = (types, id) => ((types || []).find(t => t.id === id) || {}).name || id;

// orderSummary lists a booking's lines by their labels with their prices
// (each line's ticket type named when the event has more than one), each
// promotion's discount on its own line (the line's price before it, so the
// lines add up to the total), the service fees and the tax apart
// from the prices, the hotel rooms of a package or stay night by night,
// and the total. hold is the hold's own view (its lines' types and fees,
// the tax, its stays), types the event's ticket types, names the stays'
// hotel and room names (hotels.stayNames); without them the lines and the
// total alone.
export function orderSummary(b, promo, { hold, types, names } = {}) {
  const held = (hold && hold.items) || [];
  const typed = (types || []).length > 1 || new Set(held.map(h => h.ticket_type)).size > 1;
  const cur = b.total.currency;
  const stays = (hold && hold.stays) || [];
  let sum = stayTotal(stays);
  const lines = (b.items || []).map(it => {
    const h = held.find(x => (it.seat_id ? x.seat_id === it.seat_id : !x.seat_id && x.section_id === it.section_id)) || {};
    const qty = it.quantity > 1 ? `${it.quantity} × ` : '';
    sum += it.price.amount * it.quantity;
    const type = typed && h.ticket_type ? ` <span class="ttype">· ${esc(typeName(types, h.ticket_type))}</span>` : '';
    const line = `<li data-label="${esc(it.label)}"${h.ticket_type ? ` data-type="${esc(h.ticket_type)}"` : ''}><span>${qty}${esc(it.label || it.seat_id || it.section_id)}${type}</span>
      <span>${money({ amount: (it.price.amount + (it.discount > 0 ? it.discount : 0)) * it.quantity, currency: it.price.currency })}</span></li>`;
    const off = it.discount > 0 ? `<li class="discount"><span>${t('Discount')}${promo ? ' ' + esc(promo) : ''}</span>
      <span>−${money({ amount: it.discount * it.quantity, currency: it.price.currency })}</span></li>` : '';
    return line + off;
  }).join('');
  let extra = '', after = '';
  const fees = hold && hold.fees && hold.fees.amount || 0, tax = hold && hold.tax;
  if (fees) {
    const n = (b.items || []).reduce((a, it) => a + it.quantity, 0);
    extra += `<li class="fees" id="fees" data-amount="${fees}"><span>${t(n > 1 ? 'Service fees' : 'Service fee')}${n > 1 && fees % n === 0 ? ` (${n} × ${money({ amount: fees / n, currency: cur })})` : ''}</span>
      <span>${money({ amount: fees, currency: cur })}</span></li>`;
  }
  if (tax && tax.rate_bp) {
    const rate = t('VAT {rate}%', { rate: (tax.rate_bp / 100).toLocaleString(locale()) });
    // Prices include the tax when the lines and fees make the total.
    const included = sum + fees === b.total.amount;
    if (included) after = `<p class="taxnote" id="tax" data-amount="${tax.amount}" data-included="yes">${t('Includes {rate}', { rate })}: ${money({ amount: tax.amount, currency: cur })}</p>`;
    else extra += `<li class="tax" id="tax" data-amount="${tax.amount}" data-included="no"><span>${rate}</span><span>${money({ amount: tax.amount, currency: cur })}</span></li>`;
  }
  return `<section class="summary" aria-label="${t('Order summary')}">${eventLine(b.event)}
    ${lines || extra ? `<ul class="lines">${lines}${extra}</ul>` : ''}${stayLines(stays, names)}<p class="total">${t('Total')} <strong>${money(b.total)}</strong></p>${after}</section>`;
}

// bookingsView is "My bookings": upcoming events first (soonest first),
// then past ones, each booking with its state and a link to it (a hold
// still waiting for payment links back to its payment page).
export async function bookingsView(main, get) {
  main.innerHTML = `<h1>${t('My bookings')}</h1><div id="bookings" aria-live="polite"><p>${t('Loading…')}</p></div>`;
  const box = main.querySelector('#bookings');
  const out = await get('/v1/me/bookings?limit=100');
  const now = Date.now();
  // A hotel-only stay has no event: it is upcoming until its checkout.
  const stays = b => b.stays || [];
  const at = b => (b.event ? new Date(b.event.starts_at).getTime()
    : stays(b).length ? new Date(stays(b)[0].checkout + 'T12:00:00Z').getTime() : 0);
  const names = await stayNames(out.bookings.flatMap(stays));
  const room = st => t('{hotel}, {room}, {from} to {to}', { hotel: names[st.property_id] || st.property_id,
    room: names[st.property_id + '|' + st.room_type] || st.room_type, from: nightDate(st.checkin), to: nightDate(st.checkout) })
    + (st.rooms > 1 ? ` × ${st.rooms}` : '');
  const upcoming = out.bookings.filter(b => at(b) >= now).sort((x, y) => at(x) - at(y));
  const past = out.bookings.filter(b => at(b) < now).sort((x, y) => at(y) - at(x));
  const item = b => {
    const pending = b.status === 'PENDING_PAYMENT';
    const href = (pending ? '#/hold/' : '#/booking/') + encodeURIComponent(b.booking_id);
    const what = (b.items || []).map(i => (i.quantity > 1 ? i.quantity + ' × ' : '') + i.label).concat(stays(b).map(room)).join('; ');
    const head = b.event ? eventLine(b.event) : stays(b).length ? `<p class="event"><strong>${t('Hotel stay')}</strong></p>` : '';
    return `<li data-booking="${esc(b.booking_id)}" data-status="${esc(b.status)}">${head}
      <p>${esc(what)}</p><p><span class="status">${esc(statusText(b.status))}</span> · ${money(b.total)}</p>
      <p><a href="${href}">${t(pending ? 'Finish paying' : 'See the booking and tickets')}</a></p></li>`;
  };
  const list = (title, bs) => bs.length ? `<h2>${t(title)}</h2><ul class="bookings">${bs.map(item).join('')}</ul>` : '';
  box.innerHTML = (list('Upcoming', upcoming) + list('Past', past)) || `<p>${t('No bookings yet.')}</p>`;
}
