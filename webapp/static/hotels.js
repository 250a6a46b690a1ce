// Hotels in the fan app: "Hotels near this event" (#/event/<id>/hotels),
// each property with its room types' prices night by night for the
// event's nights, and two ways on from a room: beside the seats (a
// package: the room goes into the same hold as the seats, all or nothing)
// or alone (a hotel-only stay, paid on the ordinary hold page). The hold
// and booking pages name the rooms through stayLines.
import { get, post, newKey, token } from './api.js';
import { esc, when } from './orders.js';
import { money } from './seatmap.js';
import { t, plural, locale } from './i18n.js';

// The room a fan chose on the hotel screen for an event's package waits in
// this tab until the fan holds seats on the event's page.
const chosenKey = eventID => 'stay:' + eventID;

export function chosenStay(eventID) {
  try { return JSON.parse(sessionStorage.getItem(chosenKey(eventID)) || 'null'); } catch { return null; }
}

export const forgetStay = eventID => sessionStorage.removeItem(chosenKey(eventID));

// rememberNames keeps the names of the hotels and room types a fan was
// shown: a hold's own answer names its stays by IDs, and the order summary
// should read "Canal House, Double room", not "prop_…, double".
export function rememberNames(properties) {
  const names = readNames();
  for (const p of properties || []) {
    names[p.id] = p.name;
    for (const r of p.room_types || []) names[p.id + '|' + r.id] = r.name;
  }
  try { sessionStorage.setItem('hotelnames', JSON.stringify(names)); } catch { /* names are a nicety */ }
}

function readNames() {
  try { return JSON.parse(sessionStorage.getItem('hotelnames') || '{}') || {}; } catch { return {}; }
}

// stayNames is the names of stays' hotels and rooms: those this tab was
// shown, else the hotel search's answer for the property (a hold opened in
// another tab or from an email), else none (the IDs stand in).
export async function stayNames(stays) {
  const names = readNames();
  const missing = (stays || []).filter(st => !names[st.property_id] || !names[st.property_id + '|' + st.room_type]);
  await Promise.all(missing.map(async st => {
    const q = new URLSearchParams({ dest: st.property_id, checkin: st.checkin, checkout: st.checkout });
    const out = await get('/v1/hotels/search?' + q).catch(() => null);
    if (out) rememberNames(out.properties);
  }));
  return missing.length ? readNames() : names;
}

// nightDate writes a night (YYYY-MM-DD, a calendar date with no zone) as
// the fan's language writes a date: "Fri 12 Mar".
export function nightDate(d) {
  try {
    return new Intl.DateTimeFormat(locale(), { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'short' }).format(new Date(d + 'T00:00:00Z'));
  } catch { return d; }
}

// stayLines is the order summary's rooms: one line per room-night with its
// price (times the rooms), so a package's summary lists seats and
// room-nights together and adds up to its total.
export function stayLines(stays, names = {}) {
  if (!(stays || []).length) return '';
  const lines = stays.map(st => {
    const hotel = names[st.property_id] || st.property_id, room = names[st.property_id + '|' + st.room_type] || st.room_type;
    const rooms = st.rooms > 1 ? ` × ${st.rooms}` : '';
    const nights = (st.nights || []).length ? st.nights : [{ date: st.checkin, price: { amount: st.total.amount / Math.max(1, st.rooms), currency: st.total.currency } }];
    return nights.map(n => `<li class="roomnight" data-property="${esc(st.property_id)}" data-room-type="${esc(st.room_type)}" data-night="${esc(n.date)}"
      data-amount="${n.price.amount * st.rooms}"><span>${esc(hotel)}, ${esc(room)}: ${esc(t('night of {date}', { date: nightDate(n.date) }))}${rooms}</span>
      <span>${money({ amount: n.price.amount * st.rooms, currency: n.price.currency })}</span></li>`).join('');
  }).join('');
  return `<ul class="lines" id="holdstays" aria-label="${esc(t('Hotel rooms in this hold'))}">${lines}</ul>`;
}

// stayTotal is what stays add to an order.
export const stayTotal = stays => (stays || []).reduce((a, st) => a + st.total.amount, 0);

// hotelsView is #/event/<id>/hotels[?nights=&guests=&rooms=]: the hotels
// near the event's venue, nearest first, for the event's nights (the show's
// night preselected; the fan may add nights after it), each room type with
// its price for every night and the stay's total in the hotel's currency.
export async function hotelsView(main, eventID, { showProblem, clearProblem, announce, here }) {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const kept = chosenStay(eventID);
  const pick = (name, def, most) => Math.min(most, Math.max(1, Number(params.get(name)) || (kept && kept[name]) || def));
  const state = { nights: pick('nights', 1, 7), guests: pick('guests', 2, 4), rooms: pick('rooms', 1, 4) };
  const ev = await get('/v1/events/' + encodeURIComponent(eventID));
  if (!here()) return; // the fan went on: their page stays as it is
  const options = (n, sel) => Array.from({ length: n }, (_, i) => `<option value="${i + 1}" ${i + 1 === sel ? 'selected' : ''}>${i + 1}</option>`).join('');
  main.innerHTML = `<h1>${t('Hotels near this event')}</h1>
    <p><a href="#/event/${encodeURIComponent(eventID)}"><strong>${esc(ev.title)}</strong></a> · ${esc(ev.venue)}, ${esc(ev.city)} ·
      <span class="when">${esc(when(ev.starts_at, ev.timezone, ev.city))}</span></p>
    <form class="row" id="staysearch" aria-label="${esc(t('Your stay'))}">
      <label>${t('Nights')} <select name="nights">${options(7, state.nights)}</select></label>
      <label>${t('Guests in the room')} <select name="guests">${options(4, state.guests)}</select></label>
      <label>${t('Rooms')} <select name="rooms">${options(4, state.rooms)}</select></label></form>
    <p id="staydates" aria-live="polite"></p>
    <ul class="properties" id="properties"></ul>`;
  const form = main.querySelector('#staysearch'), list = main.querySelector('#properties'), dates = main.querySelector('#staydates');
  let offer = null;
  const render = () => {
    dates.dataset.checkin = offer.checkin; dates.dataset.checkout = offer.checkout;
    dates.textContent = t('Check in {from}, check out {to}: {nights}.', { from: nightDate(offer.checkin), to: nightDate(offer.checkout),
      nights: plural(state.nights, '{n} night', '{n} nights') });
    const props = offer.properties.filter(p => p.room_types.length);
    if (!props.length) { list.innerHTML = `<li id="nohotels">${t('No hotel near the venue has a room for these nights. Try fewer nights or guests.')}</li>`; return; }
    list.innerHTML = props.map(p => `<li class="property" data-property="${esc(p.id)}"><h2>${esc(p.name)}</h2>
      <p class="note">${esc([p.address, p.city].filter(Boolean).join(', '))}${p.distance_km != null ? ' · ' + esc(t('{km} km from the venue', { km: p.distance_km.toLocaleString(locale()) })) : ''}</p>
      <ul class="rooms">${p.room_types.map(r => {
        const enough = r.available >= state.rooms;
        return `<li class="room" data-room-type="${esc(r.id)}" data-available="${r.available}"><h3>${esc(r.name)} <span class="note">(${esc(t('up to {n}', { n: r.max_guests }))})</span></h3>
        <table class="nightly"><caption class="sr-only">${esc(t('Price a night, {room} at {hotel}', { room: r.name, hotel: p.name }))}</caption>
          <thead><tr><th scope="col">${t('Night')}</th><th scope="col">${t('Price a night')}</th></tr></thead>
          <tbody>${r.nights.map(n => `<tr data-night="${esc(n.date)}"><th scope="row">${esc(nightDate(n.date))}</th>
            <td class="price" data-amount="${n.price.amount}" data-currency="${esc(n.price.currency)}">${money(n.price)}</td></tr>`).join('')}</tbody></table>
        <p class="staytotal" data-amount="${r.total.amount * state.rooms}">${t('Total for the stay')}: <strong>${money({ amount: r.total.amount * state.rooms, currency: r.total.currency })}</strong>
          ${state.rooms > 1 ? `(${plural(state.rooms, '{n} room', '{n} rooms')})` : ''} · ${esc(plural(r.available, '{n} room left', '{n} rooms left'))}</p>
        ${enough ? `<div class="row"><button type="button" class="addseats">${t('Add to my seats')}<span class="sr-only"> ${esc(r.name)}, ${esc(p.name)}</span></button>
          <button type="button" class="secondary roomonly">${t('Book the room only')}<span class="sr-only"> ${esc(r.name)}, ${esc(p.name)}</span></button></div>`
          : `<p class="note">${t('Not enough rooms left for your stay.')}</p>`}</li>`;
      }).join('')}</ul></li>`).join('');
  };
  const load = async () => {
    list.setAttribute('aria-busy', 'true');
    try {
      offer = await get(`/v1/events/${encodeURIComponent(eventID)}/hotels?guests=${state.guests}&nights=${state.nights}`);
    } finally { list.removeAttribute('aria-busy'); }
    if (!list.isConnected) return;
    rememberNames(offer.properties);
    render();
  };
  const stayOf = btn => {
    const li = btn.closest('li.room'), pid = btn.closest('li.property').dataset.property;
    return { property_id: pid, room_type: li.dataset.roomType, checkin: offer.checkin, checkout: offer.checkout, rooms: state.rooms };
  };
  form.addEventListener('change', () => {
    state.nights = +form.nights.value; state.guests = +form.guests.value; state.rooms = +form.rooms.value;
    history.replaceState(null, '', `#/event/${encodeURIComponent(eventID)}/hotels?nights=${state.nights}&guests=${state.guests}&rooms=${state.rooms}`);
    load().then(() => announce(dates.textContent), showProblem);
  });
  list.addEventListener('click', async e => {
    const btn = e.target.closest('button'); if (!btn || !offer) return;
    const stay = stayOf(btn);
    if (btn.classList.contains('addseats')) {
      // The room waits for the seats: the event's page holds both at once.
      sessionStorage.setItem(chosenKey(eventID), JSON.stringify({ ...stay, nights: state.nights, guests: state.guests }));
      clearProblem(); location.hash = '#/event/' + encodeURIComponent(eventID);
      return;
    }
    if (!token()) { showProblem(new Error(t('Please sign in to book a room.'))); return; }
    btn.disabled = true;
    try {
      const h = await post('/v1/holds', { stays: [stay] }, newKey());
      clearProblem(); location.hash = '#/hold/' + encodeURIComponent(h.hold_id);
    } catch (err) { btn.disabled = false; showProblem(err); }
  });
  await load();
}
