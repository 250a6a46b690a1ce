// The organiser app: a hash router over the organiser's screens (events,
// venues and their layouts, a new event, and an event's own pages in
// event.js). It talks to /v1/admin with the token of the demo sign-in,
// through the fan app's api.js.
import { get, request, newKey, signOut, token } from '/app/api.js';
import { main, esc, announce, explain, clearProblem, showProblem, fieldErrors, money, minor, digits, whenIn, localInput, isoOf, send, badge, errorView, labelCells, navigate, current } from './ui.js';
import { eventView } from './event.js';
import { orgView, seriesView } from './catalogue.js';
import { t, translatePage, langSwitch } from '/app/i18n.js';

let cleanup = [];
let me = null; // GET /v1/me of the signed-in organiser

const ORGANISER_ROLES = ['organiser', 'admin'];

async function signInAs(user, email, org) {
  let device = localStorage.getItem('device');
  if (!device) { device = 'web-' + newKey(); localStorage.setItem('device', device); }
  const out = await request('POST', '/v1/sessions', { user_id: user, device_id: device, email, roles: ['organiser'], org });
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
  main.innerHTML = `<h1>${t('Sign in as an organiser')}</h1>
    <p>${t('This is the development sign-in: it gives the account the organiser role for the organisation you name.')}
      ${t('The demo events belong to {org} (its organiser is {user}).', { org: '<code>org_encore</code>', user: '<code>olga</code>' })}</p>
    <form id="signin" class="stack" aria-label="${t('Organiser sign-in')}">
      <label>${t('User ID')} <input name="user" required autocomplete="username" pattern="[A-Za-z0-9_.:\\-]{1,100}" value="olga"></label>
      <label>${t('Email')} <input name="email" type="email" autocomplete="email" value="olga@encore.test"></label>
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

function notOrganiserView() {
  main.innerHTML = `<h1>${t('Organisers only')}</h1>
    <p>${t('You are signed in as {user}, who is not an organiser. Sign out, then sign in as an organiser.', { user: `<strong>${esc(me.user_id)}</strong>` })}</p>`;
}

async function eventsView() {
  main.innerHTML = `<h1>${t('Your events')}</h1>
    <p class="actions"><a class="button" href="#/new">${t('Create an event')}</a> <a class="button secondary" href="#/series">${t('Create a series of dates')}</a>
      <a class="button secondary" href="#/venues">${t('Upload a venue layout')}</a></p>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Your events (scrolls sideways on a narrow screen)')}"><table class="list" id="events">
      <caption>${t('Events of {org}, newest first, drafts included', { org: esc(me.org || t('every organisation')) })}</caption>
      <thead><tr><th scope="col">${t('Event')}</th><th scope="col">${t('Status')}</th><th scope="col">${t('Starts')}</th><th scope="col">${t('On sale from')}</th><th scope="col">${t('Seats')}</th></tr></thead>
      <tbody></tbody></table></div>
    <button class="secondary" id="more" hidden>${t('Show older events')}</button>`;
  const body = main.querySelector('#events tbody'), more = main.querySelector('#more');
  const here = current();
  let cursor = '';
  const load = async () => {
    const page = await get('/v1/admin/events?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    if (!here()) return;
    body.insertAdjacentHTML('beforeend', page.events.map(e => `<tr data-event="${esc(e.event_id)}">
      <th scope="row"><a href="#/event/${encodeURIComponent(e.event_id)}">${esc(e.title)}</a>${e.artist ? `<div class="muted">${esc(e.artist)}</div>` : ''}</th>
      <td>${badge(e.status)}</td><td>${whenIn(e.starts_at, e.timezone)}</td><td>${whenIn(e.onsale_at, e.timezone)}</td>
      <td>${e.seats}${e.general_capacity ? ` + ${t('{n} standing', { n: e.general_capacity })}` : ''}</td></tr>`).join(''));
    if (!body.children.length) body.innerHTML = `<tr><td colspan="5">${t('No events yet. Upload a venue layout, then create an event on it.')}</td></tr>`;
    labelCells(main.querySelector('#events'));
    cursor = page.next_cursor || '';
    more.hidden = !cursor;
  };
  more.onclick = () => load().catch(showProblem);
  await load();
}

async function venuesView() {
  main.innerHTML = `<h1>${t('Venues')}</h1>
    <section aria-labelledby="up"><h2 id="up">${t('Upload a venue layout')}</h2>
    <p>${t('A layout is a JSON file ({json}) or a CSV file with the columns {columns} (one line a seat; a standing area is one line with {capacity} and no row or seat). The name, city and time zone below fill in what the file does not say.', {
      json: '<code>{"name","city","timezone","layout":{"sections":[…]}}</code>', columns: '<code>section,kind,category,row,seat,x,y</code>', capacity: '<code>capacity</code>' })}</p>
    <form id="upload" class="stack">
      <label>${t('Layout file (JSON or CSV)')} <input type="file" name="file" accept=".json,.csv,application/json,text/csv" required></label>
      <label>${t('Venue name')} <input name="name" autocomplete="off"></label>
      <label>${t('City')} <input name="city" autocomplete="off"></label>
      <label>${t('Time zone of the venue (IANA, such as Europe/Amsterdam; needed unless the file says it)')} <input name="timezone" autocomplete="off" list="zones"></label>
      <datalist id="zones">${(Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : []).map(z => `<option value="${esc(z)}">`).join('')}</datalist>
      <div id="upload-errors" class="errors" tabindex="-1" hidden></div>
      <button id="uploadbtn">${t('Upload the layout')}</button>
    </form>
    <p id="uploaded" class="done" hidden></p></section>
    <section aria-labelledby="yours"><h2 id="yours">${t('Your venues')}</h2><ul class="cards" id="venues"></ul></section>`;
  const f = main.querySelector('#upload'), errs = main.querySelector('#upload-errors'), done = main.querySelector('#uploaded');
  const here = current();
  const list = async () => {
    const out = await get('/v1/admin/venues');
    if (!here()) return;
    main.querySelector('#venues').innerHTML = out.venues.map(v => `<li data-venue="${esc(v.venue_id)}"><strong>${esc(v.name)}</strong>
      <div>${esc(v.city)} · ${esc(v.timezone)}</div><div>${t('{s} sections, {n} numbered seats', { s: v.sections, n: v.seats })}</div>
      <div>${t('Price categories')}: ${v.categories.map(esc).join(', ')}</div>
      <a href="#/new/${encodeURIComponent(v.venue_id)}">${t('Create an event here')}</a></li>`).join('') || `<li>${t('No venues yet.')}</li>`;
  };
  f.onsubmit = async e => {
    e.preventDefault();
    const file = f.file.files[0];
    if (!file) return;
    const btn = main.querySelector('#uploadbtn'); btn.disabled = true;
    done.hidden = true; clearProblem(); fieldErrors(errs, null, f);
    try {
      const text = await file.text();
      const meta = { name: f.name.value.trim(), city: f.city.value.trim(), timezone: f.timezone.value.trim() };
      let out;
      if (/\.csv$/i.test(file.name) || file.type === 'text/csv') {
        const q = new URLSearchParams(Object.entries(meta).filter(([, v]) => v));
        out = await send('POST', '/v1/admin/venues?' + q, text, 'text/csv');
      } else {
        let venue;
        try { venue = JSON.parse(text); } catch (err) { throw new Error(t('The file is neither CSV nor valid JSON ({why}).', { why: err.message })); }
        if (!venue || typeof venue !== 'object' || Array.isArray(venue)) throw new Error(t('The JSON file must be one object with name, city, timezone and layout.'));
        for (const [k, v] of Object.entries(meta)) if (v && !venue[k]) venue[k] = v;
        out = await request('POST', '/v1/admin/venues', venue);
      }
      f.reset();
      await list();
      done.innerHTML = `${t('Uploaded')}: ${t('{s} sections, {n} numbered seats', { s: out.sections, n: out.seats })}.
        <a id="newhere" href="#/new/${encodeURIComponent(out.venue_id)}">${t('Create an event at this venue')}</a>`;
      done.hidden = false;
      announce(t('Layout uploaded: {s} sections, {n} seats', { s: out.sections, n: out.seats }));
    } catch (err) {
      if (!fieldErrors(errs, err, f)) showProblem(err);
      else announce(t('The layout was not uploaded:') + ' ' + explain(err));
    } finally { btn.disabled = false; }
  };
  await list();
}

async function newEventView(venueID) {
  const here = current();
  const { venues } = await get('/v1/admin/venues');
  if (!here()) return;
  if (!venues.length) {
    main.innerHTML = `<h1>${t('Create an event')}</h1><p>${t('An event is sold on one of your venues.')} <a href="#/venues">${t('Upload a venue layout')}</a> ${t('first.')}</p>`;
    return;
  }
  const zoneOf = id => (venues.find(x => x.venue_id === id) || venues[0]).timezone || 'UTC';
  const first = zoneOf(venueID || venues[0].venue_id);
  // A month away at 20:00 on the venue's clocks.
  const start = isoOf(localInput(Date.now() + 30 * 864e5, first).slice(0, 10) + 'T20:00', first);
  main.innerHTML = `<h1>${t('Create an event')}</h1>
    <p>${t('The event starts as a draft: fans see it once you publish it.')}</p>
    <form id="newevent" class="stack">
      <label>${t('Venue')} <select name="venue_id" required>${venues.map(v => `<option value="${esc(v.venue_id)}" ${v.venue_id === venueID ? 'selected' : ''}>${esc(v.name)}, ${esc(v.city)} (${t('{n} seats', { n: v.seats })})</option>`).join('')}</select></label>
      <label>${t('Title')} <input name="title" required maxlength="200"></label>
      <label>${t('Artist')} <input name="artist" maxlength="200"></label>
      <label>${t('Genre')} <input name="genre" maxlength="200"></label>
      <label>${t('Description')} <textarea name="description" rows="3" maxlength="5000"></textarea></label>
      <p class="note" id="zone">${t("Times are on the venue's clocks:")} <strong>${esc(first)}</strong>.</p>
      <div class="grid">
        <label>${t('Starts')} <input type="datetime-local" name="starts_at" required value="${localInput(start, first)}"></label>
        <label>${t('On sale from')} <input type="datetime-local" name="onsale_at" required value="${localInput(Date.now() - 60000, first)}"></label>
        <label>${t('Off sale at (optional; the start if empty)')} <input type="datetime-local" name="offsale_at"></label>
        <label>${t('Cancellation deadline (optional; 48 hours before the start if empty)')} <input type="datetime-local" name="cancellation_deadline"></label>
      </div>
      <div class="grid">
        <label>${t('Currency')} <input name="currency" required pattern="[A-Z]{3}" value="EUR" maxlength="3"></label>
        <label>${t('Tickets per customer')} <input type="number" name="per_customer_limit" min="1" max="100" value="6" required></label>
        <label>${t('Hold time (seconds)')} <input type="number" name="hold_ttl_seconds" min="30" max="3600" value="600" required></label>
        <label class="check"><span><input type="checkbox" name="metered"> ${t('Waiting room (metered sale)')}</span></label>
      </div>
      <fieldset id="prices"><legend>${t('Price per category')}</legend></fieldset>
      <div id="event-errors" class="errors" tabindex="-1" hidden></div>
      <button id="create">${t('Create the draft')}</button>
    </form>`;
  const f = main.querySelector('#newevent'), prices = main.querySelector('#prices');
  const renderPrices = () => {
    const v = venues.find(x => x.venue_id === f.venue_id.value) || venues[0];
    const cur = f.currency.value || 'EUR', step = 1 / 10 ** digits(cur);
    prices.innerHTML = `<legend>${t('Price per category')}</legend>` + v.categories.map(c => `<label>${esc(c)} (${esc(cur)})
      <input type="number" name="prices.${esc(c)}" data-category="${esc(c)}" min="0" step="${step}" required inputmode="decimal"></label>`).join('');
  };
  const zone = () => zoneOf(f.venue_id.value);
  f.venue_id.onchange = () => { renderPrices(); main.querySelector('#zone strong').textContent = zone(); };
  f.currency.onchange = renderPrices;
  renderPrices();
  f.onsubmit = async e => {
    e.preventDefault();
    const btn = main.querySelector('#create'); btn.disabled = true;
    const cur = f.currency.value.trim().toUpperCase();
    const body = {
      venue_id: f.venue_id.value, title: f.title.value.trim(), artist: f.artist.value.trim(), genre: f.genre.value.trim(),
      description: f.description.value.trim(), starts_at: isoOf(f.starts_at.value, zone()), onsale_at: isoOf(f.onsale_at.value, zone()),
      offsale_at: isoOf(f.offsale_at.value, zone()), cancellation_deadline: isoOf(f.cancellation_deadline.value, zone()), currency: cur,
      metered: f.metered.checked, per_customer_limit: +f.per_customer_limit.value, hold_ttl_seconds: +f.hold_ttl_seconds.value,
      prices: Object.fromEntries([...prices.querySelectorAll('input[data-category]')].map(i => [i.dataset.category, { amount: minor(i.value, cur), currency: cur }])),
    };
    try {
      const ev = await request('POST', '/v1/admin/events', body);
      clearProblem();
      announce(t('Draft created: {title}', { title: ev.title }) + `, ${Object.entries(ev.prices).map(([c, p]) => c + ' ' + money(p.amount, p.currency)).join(', ')}`);
      location.hash = '#/event/' + encodeURIComponent(ev.event_id);
    } catch (err) {
      btn.disabled = false;
      if (!fieldErrors(main.querySelector('#event-errors'), err, f)) showProblem(err);
    }
  };
}

async function route() {
  const here = navigate();
  for (const f of cleanup.splice(0)) f();
  delete main.dataset.error;
  const parts = location.hash.replace(/^#\/?/, '').replace(/\?.*$/, '').split('/').map(decodeURIComponent);
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
    if (!(me.roles || []).some(r => ORGANISER_ROLES.includes(r))) return notOrganiserView();
    switch (parts[0]) {
      case 'venues': await venuesView(); break;
      case 'new': await newEventView(parts[1]); break;
      case 'series': await seriesView(); break;
      case 'org': await orgView(); break;
      case 'event': await eventView(parts[1], parts[2] || '', { cleanup }); break;
      default: await eventsView();
    }
  } catch (err) { if (here()) errorView(err, route); }
}

window.addEventListener('hashchange', () => { clearProblem(); route().then(() => main.focus({ preventScroll: true })); });
// The skip link moves the focus, not the address (the router owns the hash).
document.getElementById('skip').addEventListener('click', e => { e.preventDefault(); main.focus(); });
// The language: the header's fixed texts, and a switch that shows the
// screen again in the other language.
translatePage();
document.querySelector('header.top').append(langSwitch(() => { clearProblem(); route(); }));
route();
