// The hotelier app: a hash router over a hotelier's screens (properties, a
// new property, and a property's calendar, arrivals, walks and details).
// It talks to /v1/admin/properties with the token of the demo sign-in,
// through the fan app's api.js and the organiser app's ui.js.
import { get, request, newKey, signOut, token } from '/app/api.js';
import { main, esc, announce, clearProblem, showProblem, fieldErrors, money, minor, digits, download, errorView, labelCells, navigate, current } from '/organiser/ui.js';
import { t, plural, locale, translatePage, langSwitch } from '/app/i18n.js';

let cleanup = [];
let me = null; // GET /v1/me of the signed-in hotelier

const HOTELIER_ROLES = ['hotelier', 'admin'];
const DAYS = 14; // nights the calendar shows at once
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

// Dates are calendar days (YYYY-MM-DD), counted in UTC so no clock moves
// them.
const addDays = (day, n) => new Date(Date.parse(day + 'T00:00:00Z') + n * 864e5).toISOString().slice(0, 10);
const today = () => new Date().toISOString().slice(0, 10);
const isoDay = day => (new Date(day + 'T00:00:00Z').getUTCDay() + 6) % 7 + 1; // 1 Monday .. 7 Sunday
const dayLabel = day => new Intl.DateTimeFormat(locale(), { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'short' })
  .format(new Date(day + 'T00:00:00Z'));
const major = (amount, currency) => (Number(amount || 0) / 10 ** digits(currency)).toFixed(digits(currency));

async function signInAs(user, email, org) {
  let device = localStorage.getItem('device');
  if (!device) { device = 'web-' + newKey(); localStorage.setItem('device', device); }
  const out = await request('POST', '/v1/sessions', { user_id: user, device_id: device, email, roles: ['hotelier'], org });
  sessionStorage.setItem('token', out.token);
  sessionStorage.setItem('user', user);
  me = null;
}

function renderWho() {
  const who = document.getElementById('who');
  if (!token() || !me) { who.innerHTML = ''; return; }
  who.innerHTML = `<span>${t('Signed in as')} <strong id="whoami">${esc(me.user_id)}</strong>${me.org ? ` ${t('of')} <strong>${esc(me.org)}</strong>` : ''}</span>
    <button class="secondary" id="signout">${t('Sign out')}</button>`;
  who.querySelector('#signout').onclick = () => { signOut(); me = null; renderWho(); route(); };
}

function signInView() {
  main.innerHTML = `<h1>${t('Sign in as a hotelier')}</h1>
    <p>${t('This is the development sign-in: it gives the account the hotelier role for the organisation you name.')}
      ${t('The demo hotels belong to {org} (their hotelier is {user}).', { org: '<code>org_encore</code>', user: '<code>hana</code>' })}</p>
    <form id="signin" class="stack" aria-label="${t('Hotelier sign-in')}">
      <label>${t('User ID')} <input name="user" required autocomplete="username" pattern="[A-Za-z0-9_.:\\-]{1,100}" value="hana"></label>
      <label>${t('Email')} <input name="email" type="email" autocomplete="email" value="hana@encore.test"></label>
      <label>${t('Organisation')} <input name="org" required pattern="[A-Za-z0-9_.:\\-]{1,100}" value="org_encore"></label>
      <div id="signin-errors" class="errors" tabindex="-1" hidden></div>
      <button>${t('Sign in')}</button>
    </form>`;
  const f = main.querySelector('#signin');
  f.onsubmit = async e => {
    e.preventDefault();
    try { await signInAs(f.user.value.trim(), f.email.value.trim(), f.org.value.trim()); clearProblem(); await route(); }
    catch (err) { showProblem(err); fieldErrors(main.querySelector('#signin-errors'), err, f); }
  };
}

async function propertiesView() {
  const here = current();
  const { properties } = await get('/v1/admin/properties');
  if (!here()) return;
  main.innerHTML = `<h1>${t('Your properties')}</h1>
    <p class="actions"><a class="button" href="#/new">${t('Add a property')}</a></p>
    <ul class="cards" id="properties">${properties.map(p => `<li data-property="${esc(p.property_id)}">
      <strong><a href="#/property/${encodeURIComponent(p.property_id)}">${esc(p.name)}</a></strong>
      <div>${esc(p.address ? p.address + ', ' : '')}${esc(p.city)}</div>
      <div class="muted">${p.room_types.map(r => `${esc(r.name)} (${r.max_guests})`).join(', ')}</div>
      <div class="muted">${t('Check-in {in}, check-out {out}', { in: esc(p.check_in_time), out: esc(p.check_out_time) })} · ${esc(p.contact_email)}</div></li>`).join('')
      || `<li>${t('No properties yet.')}</li>`}</ul>`;
}

function newPropertyView() {
  main.innerHTML = `<h1>${t('Add a property')}</h1>
    <form id="newprop" class="stack">
      <label>${t('Name')} <input name="name" required maxlength="200"></label>
      <div class="grid">
        <label>${t('City')} <input name="city" required maxlength="200"></label>
        <label>${t('Address')} <input name="address" maxlength="500"></label>
        <label>${t('Latitude (degrees north)')} <input name="lat" type="number" step="any" min="-90" max="90" required></label>
        <label>${t('Longitude (degrees east)')} <input name="lng" type="number" step="any" min="-180" max="180" required></label>
        <label>${t('Time zone (IANA)')} <input name="timezone" required value="Europe/Amsterdam" list="zones"></label>
        <label>${t('Currency of the rates')} <input name="currency" pattern="[A-Z]{3}" maxlength="3" value="EUR"></label>
        <label>${t('Check-in from')} <input name="check_in_time" type="time" value="15:00" required></label>
        <label>${t('Check-out by')} <input name="check_out_time" type="time" value="11:00" required></label>
      </div>
      <datalist id="zones">${(Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : []).map(z => `<option value="${esc(z)}">`).join('')}</datalist>
      <label>${t('Email of the front desk (told of every booking, change, cancellation and walk)')} <input name="contact_email" type="email" required></label>
      <label>${t('Room types, one a line: id, name, guests')} <textarea name="room_types" rows="3" required>double, Double room, 2</textarea></label>
      <div id="prop-errors" class="errors" tabindex="-1" hidden></div>
      <button id="createprop">${t('Add the property')}</button>
    </form>`;
  const f = main.querySelector('#newprop');
  f.onsubmit = async e => {
    e.preventDefault();
    const rooms = f.room_types.value.split('\n').map(l => l.trim()).filter(Boolean).map(l => {
      const [id, name, guests] = l.split(',').map(x => x.trim());
      return { id, name, max_guests: Number(guests) };
    });
    const body = { name: f.name.value.trim(), city: f.city.value.trim(), address: f.address.value.trim(), lat: Number(f.lat.value),
      lng: Number(f.lng.value), timezone: f.timezone.value.trim(), check_in_time: f.check_in_time.value, check_out_time: f.check_out_time.value,
      contact_email: f.contact_email.value.trim(), room_types: rooms, ...(f.currency.value ? { currency: f.currency.value.trim() } : {}) };
    try {
      const p = await request('POST', '/v1/admin/properties', body);
      clearProblem();
      announce(t('Property added: {name}. Put its nights on sale in the calendar.', { name: p.name }));
      location.hash = '#/property/' + encodeURIComponent(p.property_id);
    } catch (err) {
      if (!fieldErrors(main.querySelector('#prop-errors'), err, f)) showProblem(err);
    }
  };
}

const TABS = [['', 'Calendar'], ['arrivals', 'Arrivals'], ['walks', 'Walks'], ['details', 'Details']];

function header(p, page) {
  return `<p class="crumbs"><a href="#/">${t('Properties')}</a></p><h1>${esc(p.name)}</h1>
    <nav class="tabs" aria-label="${esc(p.name)}">${TABS.map(([path, label]) => `<a href="#/property/${encodeURIComponent(p.property_id)}${path ? '/' + path : ''}"
      ${path === page ? 'aria-current="page"' : ''}>${t(label)}</a>`).join('')}</nav>`;
}

async function propertyView(id, page, query) {
  const here = current();
  const p = await get('/v1/admin/properties/' + encodeURIComponent(id));
  if (!here()) return;
  switch (page) {
    case 'arrivals': return arrivalsView(p, query.get('date') || today());
    case 'walks': return walksView(p);
    case 'details': return detailsView(p);
    default: return calendarView(p, query.get('from') || today());
  }
}

// calendarView is the property's nights by room type, DAYS at a time:
// each night a button that selects it (Shift extends the selection along
// its room type) and a stop-sell switch; the form below edits the
// selected nights, or any range typed in, in one request.
async function calendarView(p, from) {
  const to = addDays(from, DAYS - 1);
  const here = current();
  const inv = await get(`/v1/admin/properties/${encodeURIComponent(p.property_id)}/inventory?from=${from}&to=${to}`);
  if (!here()) return;
  const cur = p.currency || 'EUR';
  const days = Array.from({ length: DAYS }, (_, i) => addDays(from, i));
  const at = new Map(inv.nights.map(n => [n.room_type + '|' + n.night, n]));
  const cell = (rt, day) => {
    const n = at.get(rt.id + '|' + day);
    const weekend = isoDay(day) >= 5 && isoDay(day) <= 6 ? ' weekend' : '';
    if (!n) {
      return `<td class="off${weekend}" data-room-type="${esc(rt.id)}" data-night="${day}">
        <button type="button" class="night" aria-pressed="false"><span class="rooms">—</span><span class="rate">${t('not on sale')}</span>
        <span class="sr-only">${esc(rt.name)}, ${dayLabel(day)}</span></button></td>`;
    }
    const state = n.stop_sell ? ' stopped' : n.available === 0 ? ' full' : '';
    return `<td class="${state}${weekend}" data-room-type="${esc(rt.id)}" data-night="${day}" data-allotment="${n.allotment}"
      data-overbook="${n.overbook_limit}" data-sold="${n.sold}" data-held="${n.held}" data-rate="${n.rate.amount}" data-stop="${n.stop_sell}">
      <button type="button" class="night" aria-pressed="false"><span class="rooms">${n.sold}/${n.allotment}${n.overbook_limit ? '+' + n.overbook_limit : ''}</span><span
        class="rate">${major(n.rate.amount, cur)}</span><span class="sr-only">${esc(rt.name)}, ${dayLabel(day)}: ${t('{sold} sold and {held} held of {n} rooms', { sold: n.sold, held: n.held, n: n.allotment })}${n.overbook_limit ? ' ' + t('plus {n} overbooked', { n: n.overbook_limit }) : ''}, ${t('{rate} a night', { rate: money(n.rate.amount, cur) })}${n.stop_sell ? ', ' + t('not selling') : ''}</span></button>
      <button type="button" class="stop" aria-pressed="${n.stop_sell}" aria-label="${t('Stop sell {room} on {day}', { room: esc(rt.name), day: dayLabel(day) })}">${t('Stop sell')}</button></td>`;
  };
  main.innerHTML = `${header(p, '')}
    <div class="calnav"><button class="secondary" id="prev">← ${t('{n} nights earlier', { n: DAYS })}</button>
      <label>${t('From')} <input type="date" id="calfrom" value="${from}"></label>
      <button class="secondary" id="next">${t('{n} nights later', { n: DAYS })} →</button></div>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Calendar of nights (scrolls sideways)')}"><table class="cal" id="cal">
      <caption>${t('Each night: rooms sold of the allotment (+ overbooking) and the rate in {cur}. Select nights to edit them together (Shift selects a run); Stop switches selling a night off and on.', { cur: esc(cur) })}</caption>
      <thead><tr><th scope="col">${t('Room type')}</th>${days.map(d => `<th scope="col" data-night="${d}">${esc(dayLabel(d))}</th>`).join('')}</tr></thead>
      <tbody>${p.room_types.map(rt => `<tr data-room-type="${esc(rt.id)}"><th scope="row">${esc(rt.name)}<div class="muted">${t('{n} guests', { n: rt.max_guests })}</div></th>
        ${days.map(d => cell(rt, d)).join('')}</tr>`).join('')}</tbody></table></div>
    <form id="bulk" class="stack" aria-labelledby="bulkhead"><h2 id="bulkhead">${t('Edit nights')}</h2>
      <p class="muted">${t('Fields left empty keep what each night has. Nights not on sale yet need an allotment and a rate.')}</p>
      <div class="grid">
        <label>${t('Room type')} <select name="room_type">${p.room_types.map(rt => `<option value="${esc(rt.id)}">${esc(rt.name)}</option>`).join('')}</select></label>
        <label>${t('First night')} <input type="date" name="from" required value="${from}"></label>
        <label>${t('Last night')} <input type="date" name="to" required value="${from}"></label>
        <label>${t('Allotment (rooms)')} <input type="number" name="allotment" min="0" max="10000"></label>
        <label>${t('Overbooking limit (rooms)')} <input type="number" name="overbook_limit" min="0" max="10000"></label>
        <label>${t('Rate a night')} (${esc(cur)}) <input type="number" name="rate" min="0" step="${1 / 10 ** digits(cur)}" inputmode="decimal"></label>
        <label>${t('Selling')} <select name="stop_sell"><option value="">${t('as it is')}</option><option value="false">${t('on sale')}</option><option value="true">${t('stopped')}</option></select></label>
      </div>
      <fieldset class="days"><legend>${t('Only these days of the week (none: every night)')}</legend>
        ${WEEKDAYS.map((d, i) => `<label><input type="checkbox" name="weekday" value="${i + 1}"> ${t(d)}</label>`).join('')}</fieldset>
      <div id="bulk-errors" class="errors" tabindex="-1" hidden></div>
      <button id="apply">${t('Apply to these nights')}</button>
    </form>
    <p id="applied" class="done" role="status" hidden></p>`;
  const f = main.querySelector('#bulk'), table = main.querySelector('#cal');
  const go = d => { location.hash = `#/property/${encodeURIComponent(p.property_id)}?from=${d}`; };
  main.querySelector('#prev').onclick = () => go(addDays(from, -DAYS));
  main.querySelector('#next').onclick = () => go(addDays(from, DAYS));
  main.querySelector('#calfrom').onchange = e => e.target.value && go(e.target.value);
  let anchor = null;
  const select = (rt, a, b) => {
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    for (const btn of table.querySelectorAll('button.night')) {
      const td = btn.closest('td');
      btn.setAttribute('aria-pressed', String(td.dataset.roomType === rt && td.dataset.night >= lo && td.dataset.night <= hi));
    }
    f.room_type.value = rt; f.from.value = lo; f.to.value = hi;
    const one = table.querySelector(`td[data-room-type="${CSS.escape(rt)}"][data-night="${lo}"]`);
    if (one && lo === hi && one.dataset.rate) {
      f.allotment.placeholder = one.dataset.allotment; f.overbook_limit.placeholder = one.dataset.overbook;
      f.rate.placeholder = major(one.dataset.rate, cur);
    }
    announce(lo === hi ? t('1 night of {rt} selected', { rt }) : t('Nights {lo} to {hi} of {rt} selected', { lo, hi, rt }));
  };
  table.addEventListener('click', async e => {
    const btn = e.target.closest('button');
    if (!btn) return;
    const td = btn.closest('td');
    if (btn.classList.contains('night')) {
      if (e.shiftKey && anchor && anchor.roomType === td.dataset.roomType) select(td.dataset.roomType, anchor.night, td.dataset.night);
      else { anchor = { roomType: td.dataset.roomType, night: td.dataset.night }; select(anchor.roomType, anchor.night, anchor.night); }
      return;
    }
    // Stop-sell by click: the one night, at once.
    const stop = td.dataset.stop !== 'true';
    btn.disabled = true;
    try {
      await request('PUT', `/v1/admin/properties/${encodeURIComponent(p.property_id)}/inventory`,
        { room_type: td.dataset.roomType, from: td.dataset.night, to: td.dataset.night, stop_sell: stop });
      clearProblem();
      announce(`${td.dataset.roomType}, ${td.dataset.night}: ${stop ? t('not selling') : t('selling again')}`);
      await calendarView(p, from);
    } catch (err) { btn.disabled = false; showProblem(err); }
  });
  f.onsubmit = async e => {
    e.preventDefault();
    const body = { room_type: f.room_type.value, from: f.from.value, to: f.to.value };
    if (f.allotment.value !== '') body.allotment = Number(f.allotment.value);
    if (f.overbook_limit.value !== '') body.overbook_limit = Number(f.overbook_limit.value);
    if (f.rate.value !== '') body.rate = { amount: minor(f.rate.value, cur), currency: cur };
    if (f.stop_sell.value) body.stop_sell = f.stop_sell.value === 'true';
    const days = [...f.querySelectorAll('input[name=weekday]:checked')].map(x => Number(x.value));
    if (days.length) body.weekdays = days;
    for (const td of table.querySelectorAll('td.conflict')) td.classList.remove('conflict');
    const btn = main.querySelector('#apply'); btn.disabled = true;
    try {
      const res = await request('PUT', `/v1/admin/properties/${encodeURIComponent(p.property_id)}/inventory`, body);
      clearProblem();
      await calendarView(p, from);
      const done = main.querySelector('#applied');
      done.textContent = t('Saved: {changed}, {created} put on sale ({from} to {to}).', { changed: plural(res.updated, '{n} night changed', '{n} nights changed'), created: res.created, from: res.from, to: res.to });
      done.hidden = false;
      announce(done.textContent);
    } catch (err) {
      btn.disabled = false;
      for (const n of (err.problem && err.problem.nights) || []) {
        table.querySelector(`td[data-room-type="${CSS.escape(body.room_type)}"][data-night="${n.night}"]`)?.classList.add('conflict');
      }
      fieldErrors(main.querySelector('#bulk-errors'), err, f);
      showProblem(err);
    }
  };
}

async function arrivalsView(p, date) {
  const here = current();
  const a = await get(`/v1/admin/properties/${encodeURIComponent(p.property_id)}/arrivals?date=${encodeURIComponent(date)}`);
  if (!here()) return;
  main.innerHTML = `${header(p, 'arrivals')}
    <form class="row" id="arrdate"><label>${t('Arriving on')} <input type="date" name="date" value="${esc(date)}" required></label>
      <button>${t('Show')}</button> <button type="button" class="secondary" id="csv">${t('Download CSV')}</button></form>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Arrivals')}"><table class="list" id="arrivals">
      <caption>${plural(a.arrivals.length, '{n} arrival on {date}, check-in from {time}', '{n} arrivals on {date}, check-in from {time}', { date: esc(date), time: esc(a.check_in_time) })}</caption>
      <thead><tr><th scope="col">${t('Guest')}</th><th scope="col">${t('Confirmation')}</th><th scope="col">${t('Room')}</th><th scope="col">${t('Rooms')}</th>
        <th scope="col">${t('Nights')}</th><th scope="col">${t('Leaves')}</th><th scope="col">${t('Booking')}</th></tr></thead>
      <tbody>${a.arrivals.map(x => `<tr data-booking="${esc(x.booking_id)}"><th scope="row">${esc(x.guest)}${x.walked_from ? `<div class="muted">${t('walked in from {hotel}', { hotel: esc(x.walked_from) })}</div>` : ''}</th>
        <td>${esc(x.confirmation)}</td><td>${esc(x.room_type_name)}</td><td>${x.rooms}</td><td>${x.nights}</td><td>${esc(x.checkout)}</td>
        <td class="muted">${esc(x.booking_id)}</td></tr>`).join('') || `<tr><td colspan="7">${t('No one arrives that day.')}</td></tr>`}</tbody></table></div>`;
  labelCells(main.querySelector('#arrivals'));
  const f = main.querySelector('#arrdate');
  f.onsubmit = e => { e.preventDefault(); location.hash = `#/property/${encodeURIComponent(p.property_id)}/arrivals?date=${f.date.value}`; };
  main.querySelector('#csv').onclick = () => download(`/v1/admin/properties/${encodeURIComponent(p.property_id)}/arrivals?date=${encodeURIComponent(date)}&format=csv`,
    `arrivals-${p.property_id}-${date}.csv`).catch(showProblem);
}

// walksView previews a walk (who would move and where, moving no one)
// before running it: the walk moves the bookings it then chooses, which the
// preview shows unless bookings or rooms change in between.
function walksView(p) {
  main.innerHTML = `${header(p, 'walks')}
    <p>${t('When more guests hold a night than there are rooms, walk some to another hotel in {city}: each is moved for the night at no cost, refunded the night and compensated, and told by email. Preview first: nobody moves until you confirm.', { city: esc(p.city) })}</p>
    <form class="row" id="walkform"><label>${t('Night')} <input type="date" name="night" value="${today()}" required></label>
      <label>${t('Bookings to walk')} <input type="number" name="rooms" min="1" max="1000" value="1" required></label>
      <button id="preview">${t('Preview')}</button></form>
    <div id="walkout"></div>`;
  const f = main.querySelector('#walkform'), out = main.querySelector('#walkout');
  const table = (walks, cur) => `<div class="scroll" tabindex="0" role="region" aria-label="${t('Walks')}"><table class="list" id="walklist">
    <thead><tr><th scope="col">${t('Guest')}</th><th scope="col">${t('Room')}</th><th scope="col">${t('Goes to')}</th><th scope="col">${t('Refund')}</th>
      <th scope="col">${t('Compensation')}</th><th scope="col">${t('State')}</th></tr></thead>
    <tbody>${walks.map(w => `<tr data-booking="${esc(w.booking_id)}"><th scope="row">${esc(w.guest)}</th><td>${esc(w.from_room_type)} × ${w.rooms}</td>
      <td>${w.outcome === 'cancelled' ? t('nowhere: the booking is cancelled and refunded') : `${esc(w.to_property)} (${esc(w.to_room_type)})`}</td>
      <td>${money(w.refund.amount, w.refund.currency || cur)}</td><td>${money(w.compensation.amount, w.compensation.currency || cur)}</td>
      <td>${w.done ? t('walked') : t('would be walked')}</td></tr>`).join('') || `<tr><td colspan="6">${t('Nobody would be walked.')}</td></tr>`}</tbody></table></div>`;
  f.onsubmit = async e => {
    e.preventDefault();
    try {
      const pv = await get(`/v1/admin/properties/${encodeURIComponent(p.property_id)}/walks/preview?night=${f.night.value}&rooms=${f.rooms.value}`);
      clearProblem();
      const todo = pv.walks.filter(w => !w.done).length;
      out.innerHTML = `<p class="summary" id="overbooked">${plural(pv.overbooked, '{n} room sold past the allotment on {night}.', '{n} rooms sold past the allotment on {night}.', { night: esc(pv.night) })}</p>
        ${pv.room_nights.map(n => `<p class="muted">${esc(n.room_type)}: ${t('{sold} sold, {held} held of {n}', { sold: n.sold, held: n.held, n: n.allotment })} (+${n.overbook_limit})</p>`).join('')}
        ${table(pv.walks, p.currency)}
        ${todo ? `<p><button class="danger" id="walknow">${plural(todo, 'Walk {n} guest', 'Walk {n} guests')}</button></p>` : ''}`;
      labelCells(out.querySelector('#walklist'));
      announce(plural(todo, 'Preview: {n} guest would be walked', 'Preview: {n} guests would be walked'));
      const go = out.querySelector('#walknow');
      if (!go) return;
      go.onclick = async () => {
        if (go.dataset.sure !== 'yes') { go.dataset.sure = 'yes'; go.textContent = plural(todo, 'Confirm: walk {n} guest now', 'Confirm: walk {n} guests now'); return; }
        go.disabled = true;
        try {
          const res = await request('POST', `/v1/admin/properties/${encodeURIComponent(p.property_id)}/walks`, { night: pv.night, rooms: pv.rooms });
          out.innerHTML = `<p class="done" id="walked">${plural(res.walks.length, '{n} guest walked off {night}.', '{n} guests walked off {night}.', { night: esc(pv.night) })}</p>`
            + table(res.walks.map(w => ({ ...w, guest: w.booking_id, from_room_type: '', done: true,
              refund: { amount: w.refund, currency: w.currency }, compensation: { amount: w.compensation, currency: w.currency } })), p.currency);
          labelCells(out.querySelector('#walklist'));
          announce(plural(res.walks.length, '{n} guest walked off {night}.', '{n} guests walked off {night}.', { night: pv.night }));
        } catch (err) { go.disabled = false; showProblem(err); }
      };
    } catch (err) { showProblem(err); }
  };
}

function detailsView(p) {
  main.innerHTML = `${header(p, 'details')}
    <dl class="facts"><div><dt>${t('City')}</dt><dd>${esc(p.city)}</dd></div><div><dt>${t('Where')}</dt><dd>${esc(p.lat)}, ${esc(p.lng)}</dd></div>
      <div><dt>${t('Time zone')}</dt><dd>${esc(p.timezone)}</dd></div><div><dt>${t('Currency')}</dt><dd>${esc(p.currency || t('set by the first rate'))}</dd></div>
      <div><dt>${t('Room types')}</dt><dd>${p.room_types.map(r => `${esc(r.name)} (${esc(r.id)}, ${t('{n} guests', { n: r.max_guests })})`).join(', ')}</dd></div></dl>
    <form id="details" class="stack">
      <label>${t('Name')} <input name="name" required maxlength="200" value="${esc(p.name)}"></label>
      <label>${t('Address')} <input name="address" maxlength="500" value="${esc(p.address)}"></label>
      <label>${t('Email of the front desk')} <input name="contact_email" type="email" required value="${esc(p.contact_email)}"></label>
      <div class="grid"><label>${t('Check-in from')} <input name="check_in_time" type="time" value="${esc(p.check_in_time)}" required></label>
        <label>${t('Check-out by')} <input name="check_out_time" type="time" value="${esc(p.check_out_time)}" required></label></div>
      <div id="details-errors" class="errors" tabindex="-1" hidden></div>
      <button>${t('Save')}</button></form>
    <p id="saved" class="done" role="status" hidden>${t('Saved.')}</p>`;
  const f = main.querySelector('#details');
  f.onsubmit = async e => {
    e.preventDefault();
    try {
      await request('PATCH', '/v1/admin/properties/' + encodeURIComponent(p.property_id), { name: f.name.value.trim(),
        address: f.address.value.trim(), contact_email: f.contact_email.value.trim(), check_in_time: f.check_in_time.value,
        check_out_time: f.check_out_time.value });
      clearProblem(); fieldErrors(main.querySelector('#details-errors'), null, f);
      main.querySelector('#saved').hidden = false; announce(t('Saved.'));
    } catch (err) { if (!fieldErrors(main.querySelector('#details-errors'), err, f)) showProblem(err); }
  };
}

async function route() {
  const here = navigate();
  for (const f of cleanup.splice(0)) f();
  delete main.dataset.error;
  const [path, q] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').map(decodeURIComponent);
  try {
    if (!token()) { me = null; renderWho(); return signInView(); }
    if (!me) {
      try { me = await get('/v1/me'); } catch (err) {
        if (err.status === 401) { signOut(); me = null; renderWho(); return signInView(); }
        throw err;
      }
      if (!here()) return;
    }
    renderWho();
    if (!(me.roles || []).some(r => HOTELIER_ROLES.includes(r))) {
      main.innerHTML = `<h1>${t('Hoteliers only')}</h1><p>${t('You are signed in as {user}, who is not a hotelier. Sign out, then sign in as a hotelier.', { user: `<strong>${esc(me.user_id)}</strong>` })}</p>`;
      return;
    }
    switch (parts[0]) {
      case 'new': newPropertyView(); break;
      case 'property': await propertyView(parts[1], parts[2] || '', new URLSearchParams(q || '')); break;
      default: await propertiesView();
    }
  } catch (err) { if (here()) errorView(err, route, ['#/', t('Back to your properties')]); }
}

window.addEventListener('hashchange', () => { clearProblem(); route().then(() => main.focus({ preventScroll: true })); });
// The skip link moves the focus, not the address (the router owns the hash).
document.getElementById('skip').addEventListener('click', e => { e.preventDefault(); main.focus(); });
// The language: the header's fixed texts, and a switch that shows the
// screen again in the other language.
translatePage();
document.querySelector('header.top').append(langSwitch(() => { clearProblem(); renderWho(); route(); }));
route();
