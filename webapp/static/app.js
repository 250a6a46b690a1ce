// The fan app: a hash router over a few views. Every view renders into
// <main>; problems show in the alert banner via showProblem.
import { get, post, request, blob, newKey, signIn, signOut, token, ProblemError } from './api.js';
import { message } from './problems.js';
import { signInConfig, startSignIn, finishSignIn } from './signin.js';
import { SeatMap, money, drawSeat } from './seatmap.js';

const main = document.getElementById('main');
const banner = document.getElementById('problem');
const announcer = document.getElementById('announce');
let cleanup = [];

const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const announce = text => { announcer.textContent = ''; setTimeout(() => { announcer.textContent = text; }, 20); };
const when = t => new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

function clearProblem() { banner.hidden = true; banner.textContent = ''; }

// showProblem explains an error; extra buttons (e.g. take the alternatives)
// go beside the message.
export function showProblem(err, actions = []) {
  const text = err instanceof ProblemError ? message(err.problem, err.retryAfter) : (err.message || String(err));
  banner.textContent = text;
  banner.dataset.type = err instanceof ProblemError ? String(err.problem.type || '') : 'error';
  for (const [label, fn] of actions) {
    const b = document.createElement('button'); b.textContent = label; b.className = 'secondary';
    b.addEventListener('click', fn); banner.append(b);
  }
  banner.hidden = false;
}

async function renderWho() {
  const who = document.getElementById('who');
  if (token()) {
    who.innerHTML = `<span>Signed in as <strong>${esc(sessionStorage.getItem('user'))}</strong></span> <button class="secondary" id="signout">Sign out</button>`;
    who.querySelector('#signout').onclick = () => { signOut(); renderWho(); route(); };
    return;
  }
  // With an issuer and a client ID configured, "Sign in" is the OpenID
  // Connect redirect (signin.js); otherwise the demo form.
  if ((await signInConfig()).redirect) {
    who.innerHTML = '<button id="oidc-signin">Sign in</button>';
    who.querySelector('#oidc-signin').onclick = () => startSignIn().catch(showProblem);
    return;
  }
  who.innerHTML = `<form class="row" id="signin" aria-label="Demo sign-in">
    <label>User ID <input name="user" required autocomplete="username" pattern="[A-Za-z0-9_.:\\-]+"></label>
    <label>Email <input name="email" type="email" autocomplete="email"></label>
    <button>Sign in</button></form>`;
  who.querySelector('#signin').onsubmit = async e => {
    e.preventDefault();
    const f = e.target;
    try { await signIn(f.user.value.trim(), f.email.value.trim()); clearProblem(); renderWho(); route(); }
    catch (err) { showProblem(err); }
  };
}

async function eventsView(q = '') {
  main.innerHTML = `<h1>Events</h1>
    <div class="search" role="search"><label for="q">Search events</label>
      <input id="q" type="search" autocomplete="off" role="combobox" aria-expanded="false" aria-controls="suggest" aria-autocomplete="list" value="${esc(q)}">
      <ul id="suggest" class="suggest" role="listbox" hidden></ul></div>
    <ul class="events" id="events" aria-live="polite"></ul>`;
  const input = main.querySelector('#q'), list = main.querySelector('#suggest');
  let active = -1, timer;
  const load = async text => {
    const page = await get('/v1/events?limit=50' + (text ? '&q=' + encodeURIComponent(text) : ''));
    main.querySelector('#events').innerHTML = page.events.map(e => `<li><a href="#/event/${encodeURIComponent(e.id)}"><strong>${esc(e.title)}</strong></a>
      <div>${esc(e.artist)}</div><div>${esc(e.venue)}, ${esc(e.city)}</div><div>${when(e.starts_at)}</div></li>`).join('') || '<li>No events found.</li>';
  };
  const close = () => { list.hidden = true; input.setAttribute('aria-expanded', 'false'); active = -1; };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const text = input.value.trim();
      if (!text) { close(); return load(''); }
      const out = await get('/v1/events/suggest?q=' + encodeURIComponent(text)).catch(() => ({ suggestions: [] }));
      list.innerHTML = out.suggestions.map((s, i) => `<li role="option" id="sg${i}" data-id="${esc(s.event_id)}">${esc(s.text)}</li>`).join('');
      list.hidden = !out.suggestions.length; input.setAttribute('aria-expanded', String(!list.hidden));
      load(text).catch(showProblem);
    }, 150);
  });
  input.addEventListener('keydown', e => {
    const items = [...list.children];
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault(); if (!items.length) return;
      active = (active + (e.key === 'ArrowDown' ? 1 : -1) + items.length) % items.length;
      items.forEach((li, i) => li.setAttribute('aria-selected', String(i === active)));
      input.setAttribute('aria-activedescendant', 'sg' + active);
    } else if (e.key === 'Enter' && active >= 0) { e.preventDefault(); location.hash = '#/event/' + items[active].dataset.id; }
    else if (e.key === 'Escape') close();
  });
  list.addEventListener('click', e => { const li = e.target.closest('li'); if (li) location.hash = '#/event/' + li.dataset.id; });
  await load(q);
}

function legend() {
  const wrap = document.createElement('div'); wrap.className = 'legend'; wrap.setAttribute('aria-hidden', 'true');
  for (const st of ['available', 'selected', 'held', 'sold', 'blocked']) {
    const c = document.createElement('canvas'); c.width = 20; c.height = 20;
    drawSeat(c.getContext('2d'), 10, 10, 8, st);
    const s = document.createElement('span'); s.append(c, ' ' + st); wrap.append(s);
  }
  return wrap;
}

async function eventView(id, sectionID) {
  const ev = await get('/v1/events/' + encodeURIComponent(id));
  const seated = ev.sections.filter(s => s.kind !== 'general');
  const section = sectionID || (seated[0] && seated[0].id);
  main.innerHTML = `<h1>${esc(ev.title)}</h1><p>${esc(ev.artist)} · ${esc(ev.venue)}, ${esc(ev.city)} · ${when(ev.starts_at)}</p>
    <p>${esc(ev.description)}</p>
    <h2>Sections</h2><div class="sections" role="list">${ev.sections.map(s => `<a role="listitem" href="#/event/${encodeURIComponent(id)}/${encodeURIComponent(s.id)}"
      data-section="${esc(s.id)}" ${s.id === sectionID ? 'aria-current="true"' : ''}>${esc(s.name)} — ${s.available} of ${s.capacity} left, from ${money(s.base_price)}</a>`).join('')}</div>
    <h2 id="maphead">Choose your seats</h2>
    <div class="maptools"><button class="secondary" id="zin" aria-label="Zoom in">+</button><button class="secondary" id="zout" aria-label="Zoom out">−</button>
      <button class="secondary" id="zfit">Fit</button></div>
    <div class="map" id="map" aria-describedby="maphead"></div>
    <h2>Your selection</h2><ul id="selection"></ul>
    <form class="row" id="holdform"><label>Promotion code <input name="promo" autocomplete="off" pattern="[A-Za-z0-9_\-]{1,64}"></label>
      <button id="hold" disabled>Hold these seats</button></form>
    <h2>Or let us choose</h2>
    <form class="row" id="best"><label>Section <select name="section">${ev.sections.map(s => `<option value="${esc(s.id)}" ${s.id === section ? 'selected' : ''}>${esc(s.name)}${s.kind === 'general' ? ' (standing)' : ''}</option>`).join('')}</select></label>
      <label>Tickets <input name="qty" type="number" min="1" max="6" value="2" required></label>
      <label><span><input name="adjacent" type="checkbox" checked> Together</span></label>
      <button>Find the best seats</button></form>`;
  main.querySelector('#map').after(legend());
  const promo = () => main.querySelector('#holdform').promo.value.trim();
  const tryHold = async (body, onFail) => {
    if (!token()) { showProblem(new Error('Please sign in to hold seats.')); return; }
    try {
      const h = await post('/v1/holds', { event_id: id, ...body, ...(promo() ? { promo_code: promo() } : {}) }, newKey());
      clearProblem(); location.hash = '#/hold/' + h.hold_id;
    } catch (err) { onFail(err); }
  };
  main.querySelector('#best').onsubmit = e => {
    e.preventDefault();
    const f = e.target, general = (ev.sections.find(s => s.id === f.section.value) || {}).kind === 'general';
    tryHold({ section_id: f.section.value, quantity: +f.qty.value, ...(general ? {} : { adjacent: f.adjacent.checked }) }, err => showProblem(err));
  };
  if (!seated.length) return;
  const sel = main.querySelector('#selection'), holdBtn = main.querySelector('#hold');
  // One map of the whole venue: every seated section, each followed live.
  const map = new SeatMap(main.querySelector('#map'), id, seated, {
    announce,
    onChange: seats => {
      sel.innerHTML = seats.map(s => `<li data-seat="${esc(s.id)}">Row ${esc(s.row)}, seat ${s.number} — ${money(s.price)}</li>`).join('');
      holdBtn.disabled = !seats.length;
    },
  });
  cleanup.push(() => map.close());
  main.querySelector('#zin').onclick = () => map.zoom(1.25);
  main.querySelector('#zout').onclick = () => map.zoom(0.8);
  main.querySelector('#zfit').onclick = () => map.fit();
  // A section link frames its section on the map (a standing section has
  // no seats: it chooses the section for "let us choose") without
  // rebuilding the page; the address still names the section.
  const showSection = sid => {
    const s = ev.sections.find(x => x.id === sid);
    if (!s) return;
    for (const a of main.querySelectorAll('.sections a[data-section]')) {
      if (a.dataset.section === sid) a.setAttribute('aria-current', 'true'); else a.removeAttribute('aria-current');
    }
    main.querySelector('#best').section.value = sid;
    history.replaceState(null, '', `#/event/${encodeURIComponent(id)}/${encodeURIComponent(sid)}`);
    if (s.kind === 'general') {
      announce(`${s.name}: standing, ${s.available} of ${s.capacity} places left. Choose how many tickets under "Or let us choose".`);
      main.querySelector('#best').qty.focus();
    } else map.showSection(sid);
  };
  main.querySelector('.sections').addEventListener('click', e => {
    const a = e.target.closest('a[data-section]');
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    showSection(a.dataset.section);
  });
  if (sectionID && seated.some(s => s.id === sectionID)) map.showSection(sectionID, false);
  await map.load();
  const hold = async seatIDs => {
    holdBtn.disabled = true;
    await tryHold({ seat_ids: seatIDs }, err => {
      holdBtn.disabled = false;
      const alts = err.problem && err.problem.alternatives || [];
      showProblem(err, alts.length ? [['Take the alternative seats', () => hold(alts)]] : []);
      map.refresh();
    });
  };
  main.querySelector('#holdform').onsubmit = e => { e.preventDefault(); hold([...map.selected]); };
}

async function holdView(id) {
  const h = await get('/v1/holds/' + encodeURIComponent(id));
  main.innerHTML = `<h1>Your hold</h1>
    <p>Seats: ${h.items ? h.items.map(i => esc(i.seat_id || i.id || '')).join(', ') : esc(h.seat_ids.join(', '))}</p>
    <p>Total: <strong>${money(h.total)}</strong></p>
    <p>Time left to pay: <span class="countdown" id="countdown" role="timer" aria-live="off"></span></p>
    <form class="row" id="pay"><label>Test card <select name="pm">
      <option value="pm_card_visa">Visa (succeeds)</option>
      <option value="pm_card_chargeDeclined">Declined card</option>
      <option value="pm_card_threeDSecure2Required">3-D Secure card</option></select></label>
      <button id="paybtn">Pay ${money(h.total)}</button>
      <button type="button" class="secondary" id="release">Release</button></form>`;
  const cd = main.querySelector('#countdown'), end = new Date(h.expires_at).getTime();
  const tick = () => {
    const s = Math.max(0, Math.round((end - Date.now()) / 1000));
    cd.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
    if (s === 0) { showProblem(new ProblemError({ type: '/problems/hold-expired' }, 410)); main.querySelector('#paybtn').disabled = true; }
    if (s === 60) announce('One minute left to pay');
  };
  tick();
  const iv = setInterval(tick, 1000); cleanup.push(() => clearInterval(iv));
  const key = newKey();
  main.querySelector('#pay').onsubmit = async e => {
    e.preventDefault();
    const btn = main.querySelector('#paybtn'); btn.disabled = true;
    try {
      const res = await post(`/v1/holds/${encodeURIComponent(id)}/checkout`,
        { payment_method: e.target.pm.value, return_url: location.origin + '/#/hold/' + id }, key);
      clearProblem();
      // 3-D Secure: the bank's page opens beside the booking page, which
      // keeps following the saga and shows the result when it is done.
      const next = res.payment && res.payment.next_action;
      if (next) sessionStorage.setItem('verify:' + res.booking_id, next);
      location.hash = '#/booking/' + res.booking_id;
    } catch (err) { btn.disabled = false; showProblem(err); }
  };
  main.querySelector('#release').onclick = async () => {
    try { await request('DELETE', '/v1/holds/' + encodeURIComponent(id)); location.hash = '#/event/' + h.event_id; } catch (err) { showProblem(err); }
  };
}

const FINAL = ['PAID', 'FAILED', 'CANCELLED', 'REFUNDED', 'EXPIRED'];

async function bookingView(id) {
  main.innerHTML = `<h1>Your booking</h1><p>Status: <span class="status" id="bstatus" aria-live="polite">…</span></p><ul class="tickets" id="tickets"></ul>`;
  const st = main.querySelector('#bstatus');
  let stop = false; cleanup.push(() => { stop = true; });
  for (let i = 0; !stop; i++) {
    const b = await get('/v1/bookings/' + encodeURIComponent(id));
    st.textContent = b.status;
    const verify = sessionStorage.getItem('verify:' + id);
    if (verify && !main.querySelector('#verify') && !FINAL.includes(b.status)) {
      const p = document.createElement('p');
      p.innerHTML = 'Your bank needs to confirm this payment: <a id="verify" target="_blank" rel="noopener">Verify the payment</a> (opens a new tab; this page updates by itself).';
      p.querySelector('a').href = verify; st.parentElement.after(p);
    }
    // PAID is set when the seats are sold; the tickets are issued a moment
    // later (after the capture), so the page waits for one per seat.
    const issuing = b.status === 'PAID' && b.tickets.length < (b.seat_ids || []).length;
    if (issuing) st.textContent = 'PAID (issuing your tickets…)';
    if (FINAL.includes(b.status) && !issuing) {
      st.textContent = b.status;
      sessionStorage.removeItem('verify:' + id);
      const v = main.querySelector('#verify'); if (v) v.parentElement.remove();
      if (b.status === 'PAID') showTickets(main.querySelector('#tickets'), b.tickets.map(t => ({ ...t, event_id: b.event_id })));
      if (b.status === 'FAILED') showProblem(new Error('The payment failed. Your seats were released.'));
      return;
    }
    await new Promise(r => setTimeout(r, Math.min(2000, 300 + i * 100)));
  }
}

// showTickets lists tickets with their rotating QR codes, each refetched
// when its code expires.
function showTickets(ul, tickets) {
  ul.innerHTML = tickets.map(t => `<li><h3>Seat ${esc(t.seat_id || 'general admission')}</h3>
    <img data-ticket="${esc(t.id)}" alt="Entry QR code for seat ${esc(t.seat_id || '')}"></li>`).join('');
  for (const img of ul.querySelectorAll('img')) {
    let timer, url;
    const load = async () => {
      try {
        const q = await blob(`/v1/tickets/${encodeURIComponent(img.dataset.ticket)}/qr?format=png`);
        if (url) URL.revokeObjectURL(url);
        url = URL.createObjectURL(q.blob); img.src = url;
        const wait = q.expires ? Math.max(1000, new Date(q.expires).getTime() - Date.now()) : 15000;
        timer = setTimeout(load, wait);
      } catch (err) { showProblem(err); }
    };
    load();
    cleanup.push(() => clearTimeout(timer));
  }
}

async function ticketsView() {
  main.innerHTML = '<h1>My tickets</h1><ul class="tickets" id="tickets"></ul>';
  if (!token()) { main.append('Sign in to see your tickets.'); return; }
  const out = await get('/v1/me/tickets');
  const ul = main.querySelector('#tickets');
  if (!out.tickets.length) { ul.innerHTML = '<li>No tickets yet.</li>'; return; }
  const valid = out.tickets.filter(t => t.status === 'VALID');
  showTickets(ul, valid);
  const bookings = [...new Set(valid.map(t => t.booking_id))];
  const box = document.createElement('div');
  box.innerHTML = '<h2>Cancel a booking</h2>' + bookings.map(b => `<p>Booking ${esc(b.slice(0, 8))}: <button class="secondary" data-cancel="${esc(b)}">Cancel this booking</button></p>`).join('');
  main.append(box);
  box.addEventListener('click', async e => {
    const b = e.target.closest('button[data-cancel]'); if (!b) return;
    if (b.dataset.sure !== 'yes') { b.dataset.sure = 'yes'; b.textContent = 'Press again to confirm the cancellation'; return; }
    b.disabled = true;
    try { await post(`/v1/bookings/${encodeURIComponent(b.dataset.cancel)}/cancel`, {}, newKey()); announce('Booking cancelled'); route(); }
    catch (err) { b.disabled = false; showProblem(err); }
  });
}

async function route() {
  for (const f of cleanup.splice(0)) f();
  const parts = location.hash.replace(/^#\/?/, '').replace(/\?.*$/, '').split('/').map(decodeURIComponent);
  try {
    switch (parts[0]) {
      case 'event': await eventView(parts[1], parts[2]); break;
      case 'hold': await holdView(parts[1]); break;
      case 'booking': await bookingView(parts[1]); break;
      case 'tickets': await ticketsView(); break;
      default: await eventsView();
    }
  } catch (err) { showProblem(err); }
}

window.addEventListener('hashchange', () => { clearProblem(); route(); });
// A return from the issuer (?code= or ?error=) is finished before the first
// view, so it renders signed in.
finishSignIn().catch(showProblem).finally(() => { renderWho(); route(); });
