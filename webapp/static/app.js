// The fan app: a hash router over a few views. Every view renders into
// <main>; problems show in the alert banner via showProblem.
import { get, post, request, watch, newKey, signIn, signOut, token, passFor, savePass, ProblemError, OfflineError } from './api.js';
import { Queue } from './queue.js';
import { message } from './problems.js';
import { signInConfig, startSignIn, finishSignIn } from './signin.js';
import { SeatMap, money, drawSeat } from './seatmap.js';
import { PaymentForm, paymentConfig } from './pay.js';
import { esc, when, statusText, eventLine, orderSummary, bookingsView } from './orders.js';
import * as wallet from './wallet.js';
import * as transfers from './transfers.js';
import * as resale from './resale.js';
import { documentsBox } from './documents.js';
import { Questions } from './questions.js';
import { hotelsView, chosenStay, forgetStay, rememberNames, stayNames, nightDate } from './hotels.js';
import { t, plural, translatePage, langSwitch, locale } from './i18n.js';

const tr = t; // for views whose ticket types are called t

const main = document.getElementById('main');
const banner = document.getElementById('problem');
const announcer = document.getElementById('announce');
let cleanup = [];

const announce = text => { announcer.textContent = ''; setTimeout(() => { announcer.textContent = text; }, 20); };

function clearProblem() { banner.hidden = true; banner.textContent = ''; }

// navigation counts the router's renders (route). A view takes the count as
// it starts (const here = current()) and, after every await, draws only
// while here() still holds: a view the fan has already left returns
// without drawing (nor drawing anything again), so the page they went to,
// and what they typed or chose on it, stays as it is. A view that fails
// after the fan has moved on shows no error either.
let navigation = 0;
const current = () => { const n = navigation; return () => n === navigation; };

// words says an error that is not the API's problem: the app's own
// sentences as they are, anything the browser threw (a TypeError, a
// DOMException) as a plain sentence instead of its text.
function words(err) {
  if (err instanceof OfflineError) return err.message;
  if (!(err instanceof Error) || err instanceof TypeError || err instanceof SyntaxError || err instanceof RangeError ||
    (typeof DOMException !== 'undefined' && err instanceof DOMException)) {
    return t('Something went wrong on this page. Please try again.');
  }
  return err.message;
}

// errorView replaces the page that could not be shown (never the previous
// page left on screen under an error) with what happened and a way on.
function errorView(err) {
  console.error(err); // the fan reads words; a developer's console keeps the cause
  main.dataset.error = String(err && err.stack || err).slice(0, 500);
  main.innerHTML = `<h1>${t('We could not show this page')}</h1><p id="errtext"></p>
    <p><button id="retry">${t('Try again')}</button> <a href="#/">${t('Back to the events')}</a></p>`;
  main.querySelector('#errtext').textContent = err instanceof ProblemError ? message(err.problem, err.retryAfter) : words(err);
  main.querySelector('#retry').onclick = () => { clearProblem(); route(); };
  showProblem(err);
}

// showProblem explains an error; extra buttons (e.g. take the alternatives)
// go beside the message.
export function showProblem(err, actions = []) {
  const text = err instanceof ProblemError ? message(err.problem, err.retryAfter) : words(err);
  banner.textContent = text;
  banner.dataset.type = err instanceof ProblemError ? String(err.problem.type || '') : 'error';
  const type = err instanceof ProblemError ? String(err.problem.type || '') : '';
  const eventID = (location.hash.match(/^#\/(?:event|queue)\/([^/?]+)/) || [])[1];
  if (type.endsWith('/queue-required') && eventID && !actions.length) {
    actions = [[t('Join the waiting room'), () => { location.hash = '#/queue/' + eventID; }]];
  }
  if ((type.endsWith('/pending-checkout') || type.endsWith('/stay-already-held')) && err.problem.hold_id && !actions.length) {
    actions = [[t('Go to your hold'), () => { location.hash = '#/hold/' + encodeURIComponent(err.problem.hold_id); }]];
  }
  for (const [label, fn] of actions) {
    const b = document.createElement('button'); b.textContent = label; b.className = 'secondary';
    b.addEventListener('click', fn); banner.append(b);
  }
  banner.hidden = false;
}

async function renderWho() {
  const who = document.getElementById('who');
  if (token()) {
    who.innerHTML = `<span>${t('Signed in as')} <strong>${esc(sessionStorage.getItem('user'))}</strong></span> <button class="secondary" id="signout">${t('Sign out')}</button>`;
    who.querySelector('#signout').onclick = () => { signOut(); wallet.forgetAll(); renderWho(); route(); };
    return;
  }
  // With an issuer and a client ID configured, "Sign in" is the OpenID
  // Connect redirect (signin.js); otherwise the demo form.
  if ((await signInConfig()).redirect) {
    who.innerHTML = `<button id="oidc-signin">${t('Sign in')}</button>`;
    who.querySelector('#oidc-signin').onclick = () => startSignIn().catch(showProblem);
    return;
  }
  who.innerHTML = `<form class="row" id="signin" aria-label="${t('Demo sign-in')}">
    <label>${t('User ID')} <input name="user" required autocomplete="username" pattern="[A-Za-z0-9_.:\\-]+"></label>
    <label>${t('Email')} <input name="email" type="email" autocomplete="email"></label>
    <button>${t('Sign in')}</button></form>`;
  who.querySelector('#signin').onsubmit = async e => {
    e.preventDefault();
    const f = e.target;
    try { await signIn(f.user.value.trim(), f.email.value.trim()); clearProblem(); renderWho(); route(); }
    catch (err) { showProblem(err); }
  };
}

async function eventsView(q = '') {
  main.innerHTML = `<h1>${t('Events')}</h1>
    <div class="search" role="search"><label for="q">${t('Search events')}</label>
      <input id="q" type="search" autocomplete="off" role="combobox" aria-expanded="false" aria-controls="suggest" aria-autocomplete="list" value="${esc(q)}">
      <ul id="suggest" class="suggest" role="listbox" hidden></ul></div>
    <ul class="events" id="events" aria-live="polite"></ul>`;
  const input = main.querySelector('#q'), list = main.querySelector('#suggest');
  let active = -1, timer;
  const events = main.querySelector('#events');
  const load = async text => {
    const page = await get('/v1/events?limit=50' + (text ? '&q=' + encodeURIComponent(text) : ''));
    // The fan may have left this view while the list was on its way.
    if (!events.isConnected) return;
    events.innerHTML = page.events.map(e => `<li><a href="#/event/${encodeURIComponent(e.id)}"><strong>${esc(e.title)}</strong></a>
      <div>${esc(e.artist)}</div><div>${esc(e.venue)}, ${esc(e.city)}</div><div class="when">${esc(when(e.starts_at, e.timezone, e.city))}</div></li>`).join('') || `<li>${t('No events found.')}</li>`;
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
    const s = document.createElement('span'); s.dataset.state = st; s.append(c, ' ' + t(st)); wrap.append(s);
  }
  return wrap;
}

// narrow says the screen is a phone's: long lists start folded there, so
// the seat map is on the first screen.
const narrow = () => matchMedia('(max-width: 40rem)').matches;

// priceLegend adds the price colours of available seats to the legend
// (a map with one price has none).
function priceLegend(wrap, tiers, areas = []) {
  if (!wrap) return;
  for (const [k, tier] of tiers.entries()) {
    const c = document.createElement('canvas'); c.width = 20; c.height = 20;
    drawSeat(c.getContext('2d'), 10, 10, 8, 'price' + k);
    const s = document.createElement('span'); s.dataset.price = String(tier.amount); s.dataset.colour = tier.colour;
    s.append(c, ' ' + t(tier.more ? 'available, {price} or less' : 'available, {price}', { price: money({ amount: tier.amount, currency: tier.currency }) }));
    if (tier.category) { s.dataset.category = tier.category; s.append(` (${tier.category})`); }
    wrap.querySelector('[data-state=selected]').before(s);
  }
  if (tiers.length) wrap.querySelector('[data-state=available]').remove();
  // The stage and the standing areas, as the map draws them.
  const stage = document.createElement('span'); stage.dataset.legend = 'stage';
  stage.innerHTML = `<i class="swatch stage"></i> ${t('Stage')}`;
  wrap.append(stage);
  if (areas.length) {
    const s = document.createElement('span'); s.dataset.legend = 'standing';
    s.innerHTML = `<i class="swatch area"></i> ${t('Standing area: press it to choose how many')}`;
    wrap.append(s);
  }
}

// ticketsInfo lists an event's ticket types with their prices per seat
// category (named by its sections) and the service fee, when there is
// more than one type or a fee.
function ticketsInfo(ev) {
  const types = ev.ticket_types || [], fee = ev.service_fee && ev.service_fee.amount ? ev.service_fee : null;
  if (types.length < 2 && !fee) return '';
  const cats = [...new Set(ev.sections.map(s => s.category))];
  const where = c => cats.length > 1 ? ev.sections.filter(s => s.category === c).map(s => s.name).join(', ') + ' ' : '';
  return `<section id="tickettypes" class="tickettypes" aria-labelledby="typeshead"><h2 id="typeshead">${t('Tickets')}</h2>
    ${types.length > 1 ? `<ul class="types">${types.map(t => `<li data-type="${esc(t.id)}"><strong>${esc(t.name)}</strong>:
      ${cats.filter(c => t.prices[c]).map(c => `<span data-category="${esc(c)}">${esc(where(c))}${money(t.prices[c])}</span>`).join(' · ')}
      ${t.max_per_order ? ` (${tr('at most {n} per order', { n: t.max_per_order })})` : ''}</li>`).join('')}</ul>` : ''}
    ${fee ? `<p id="servicefee" data-amount="${fee.amount}">${tr('Plus a service fee of {fee} per ticket, shown apart at checkout.', { fee: `<strong>${money(fee)}</strong>` })}</p>` : ''}
    </section>`;
}

async function eventView(id, sectionID) {
  const here = current();
  const ev = await get('/v1/events/' + encodeURIComponent(id));
  if (!here()) return;
  const seated = ev.sections.filter(s => s.kind !== 'general');
  const section = sectionID || (seated[0] && seated[0].id);
  // Ticket types (Adult, Child…): a fan chooses one per seat, the first
  // unless they say otherwise; a type without a price for a seat's
  // category is not sold there.
  const types = ev.ticket_types || [], multi = types.length > 1;
  // On a phone "let us choose" comes first, the map below it: most fans
  // there want two good seats, not to pan a venue on a small screen.
  const phone = narrow();
  const best = `<section id="bestbox" class="${phone ? 'bestfirst' : ''}" aria-labelledby="besthead">
    <h2 id="besthead">${t(phone ? 'Best available' : 'Or let us choose')}</h2>
    <form class="row" id="best"><label>${t('Section')} <select name="section">${ev.sections.map(s => `<option value="${esc(s.id)}" ${s.id === section ? 'selected' : ''}>${esc(s.name)}${s.kind === 'general' ? ' (' + t('standing') + ')' : ''}</option>`).join('')}</select></label>
      <label>${t('Tickets')} <input name="qty" type="number" min="1" max="6" value="2" required></label>
      ${multi ? `<label>${t('Ticket type')} <select name="ttype">${types.map(t => `<option value="${esc(t.id)}">${esc(t.name)}</option>`).join('')}</select></label>` : ''}
      <label><span><input name="adjacent" type="checkbox" checked> ${t('Together')}</span></label>
      <button>${t('Find the best seats')}</button></form></section>`;
  main.innerHTML = `${seated.length ? `<p><a class="skip" id="tomap" href="#map">${t('Skip to the seat map')}</a></p>` : ''}<h1>${esc(ev.title)}</h1><p>${esc(ev.artist)} · ${esc(ev.venue)}, ${esc(ev.city)} · <span class="when">${esc(when(ev.starts_at, ev.timezone, ev.city))}</span></p>
    <p>${esc(ev.description)}</p>
    ${ticketsInfo(ev)}
    <p><a id="resalelink" href="#/event/${encodeURIComponent(id)}/resale">${t('Resale tickets')}</a> ${t('from other fans')}</p>
    <details class="sectionlist" id="sectionlist" ${phone ? '' : 'open'}><summary><h2>${t('Sections ({n})', { n: ev.sections.length })}</h2></summary>
    <div class="sections" role="list">${ev.sections.map(s => `<a role="listitem" href="#/event/${encodeURIComponent(id)}/${encodeURIComponent(s.id)}"
      data-section="${esc(s.id)}" ${s.id === sectionID ? 'aria-current="true"' : ''}>${esc(s.name)} — ${t('{n} of {cap} left, from {price}', { n: s.available, cap: s.capacity, price: money(s.base_price) })}</a>`).join('')}</div></details>
    ${phone && seated.length ? best : ''}
    <h2 id="maphead">${t(phone ? 'Or choose your seats on the map' : 'Choose your seats')}</h2>
    <div class="maptools"><button class="secondary" id="zin" aria-label="${t('Zoom in')}">+</button><button class="secondary" id="zout" aria-label="${t('Zoom out')}">−</button>
      <button class="secondary" id="zfit">${t('Fit')}</button></div>
    <div class="map" id="map" aria-describedby="maphead"></div>
    <div id="areapanel" class="areapanel" hidden></div>
    <h2>${t('Your selection')}</h2><ul id="selection" class="selection"></ul>
    <section id="stay" class="stay" aria-labelledby="stayhead" hidden><h2 id="stayhead">${t('Stay the night')}</h2>
      <p id="staynote"></p>
      <p><a id="hotelslink" href="#/event/${encodeURIComponent(id)}/hotels">${t('Hotels near this event')}</a>: ${t('every hotel with its price night by night, for more nights, or a room without seats')}</p>
      <label>${t('Guests in the room')} <select id="guests">${[1, 2, 3, 4].map(n => `<option ${n === 2 ? 'selected' : ''}>${n}</option>`).join('')}</select></label>
      <fieldset id="hotels"><legend>${t('Add a room to your seats: one booking, seats and room, or nothing')}</legend></fieldset></section>
    <form class="row" id="holdform"><label>${t('Promotion code')} <input name="promo" autocomplete="off" pattern="[A-Za-z0-9_\-]{1,64}"></label>
      <button id="hold" disabled>${t('Hold these seats')}</button></form>
    ${phone && seated.length ? '' : best}`;
  main.querySelector('#map').after(legend());
  const promo = () => main.querySelector('#holdform').promo.value.trim();
  const stay = hotelOffer(id);
  const tryHold = async (body, onFail) => {
    if (!token()) {
      // Asked where the fan is looking, and the choice kept for after
      // signing in (the page renders again then).
      sessionStorage.setItem('selection', JSON.stringify({ event: id, seats: body.seat_ids || [] }));
      askToSignIn();
      onFail(null);
      return;
    }
    try {
      const room = stay();
      const h = await post('/v1/holds', { event_id: id, ...body, ...(promo() ? { promo_code: promo() } : {}), ...(room ? { stays: [room] } : {}) }, newKey());
      forgetStay(id);
      clearProblem(); location.hash = '#/hold/' + h.hold_id;
    } catch (err) { onFail(err); }
  };
  const askToSignIn = () => {
    let p = main.querySelector('#holdprompt');
    if (!p) {
      p = document.createElement('p'); p.id = 'holdprompt'; p.className = 'prompt'; p.setAttribute('role', 'status');
      p.innerHTML = `${t('Sign in to hold these seats: your choice is kept.')} <button type="button" class="secondary">${t('Sign in')}</button>`;
      p.querySelector('button').onclick = () => {
        const b = document.getElementById('oidc-signin');
        if (b) { b.click(); return; }
        const input = document.querySelector('#signin input[name=user]');
        if (input) { input.scrollIntoView({ block: 'center' }); input.focus(); }
      };
      main.querySelector('#holdform').after(p);
    }
    p.scrollIntoView({ block: 'center' });
  };
  main.querySelector('#best').onsubmit = e => {
    e.preventDefault();
    const f = e.target, general = (ev.sections.find(s => s.id === f.section.value) || {}).kind === 'general';
    tryHold({ section_id: f.section.value, quantity: +f.qty.value, ...(general ? {} : { adjacent: f.adjacent.checked }),
      ...(multi && f.ttype.value !== types[0].id ? { ticket_type: f.ttype.value } : {}) }, err => err && showProblem(err));
  };
  if (!seated.length) return;
  const sel = main.querySelector('#selection'), holdBtn = main.querySelector('#hold');
  const chosen = new Map(); // seat ID -> the type the fan chose for it
  const typeOf = seat => chosen.get(seat.id) || (types[0] && types[0].id);
  const typesFor = seat => types.filter((t, i) => i === 0 || t.prices[seat.category]);
  const priceOf = seat => {
    const i = types.findIndex(t => t.id === typeOf(seat));
    return (i > 0 && types[i].prices[seat.category]) || seat.price;
  };
  let shown = [];
  sel.addEventListener('change', e => {
    const s = e.target.closest('select[data-seat]'); if (!s) return;
    const seat = shown.find(x => x.id === s.dataset.seat); if (!seat) return;
    chosen.set(seat.id, s.value);
    const li = s.closest('li'); li.dataset.type = s.value;
    li.querySelector('.price').textContent = money(priceOf(seat));
    announce(t('Row {row}, seat {n}', { row: seat.row, n: seat.number }) + `: ${s.selectedOptions[0].textContent}, ${money(priceOf(seat))}`);
  });
  // One map of the whole venue: every seated section, each followed live.
  // A standing area pressed on the map (or in the section list) asks how
  // many tickets, and holds them.
  const areaPanel = main.querySelector('#areapanel');
  const chooseArea = a => {
    for (const x of map.areas) x.el.setAttribute('aria-expanded', String(x.id === a.id));
    const most = Math.max(1, Math.min(6, a.available));
    areaPanel.dataset.area = a.id;
    areaPanel.innerHTML = `<h3 id="areahead">${esc(a.name)}</h3>
      <p>${t('Standing: {n} of {cap} places left, {price} each. Choose how many tickets.', { n: a.available, cap: a.capacity, price: money(a.base_price) })}</p>
      <form class="row" id="areaform"><label>${t('Tickets')} <input name="qty" type="number" min="1" max="${most}" value="${Math.min(2, most)}" required></label>
        ${multi ? `<label>${t('Ticket type')} <select name="ttype">${types.map(x => `<option value="${esc(x.id)}">${esc(x.name)}</option>`).join('')}</select></label>` : ''}
        <button id="areahold">${t('Hold standing tickets')}</button>
        <button type="button" class="secondary" id="areaclose">${t('Close')}</button></form>`;
    areaPanel.hidden = false;
    const f = areaPanel.querySelector('#areaform');
    f.onsubmit = e => {
      e.preventDefault();
      f.querySelector('#areahold').disabled = true;
      tryHold({ section_id: a.id, quantity: +f.qty.value, ...(multi && f.ttype.value !== types[0].id ? { ticket_type: f.ttype.value } : {}) },
        err => { f.querySelector('#areahold').disabled = false; if (err) showProblem(err); });
    };
    areaPanel.querySelector('#areaclose').onclick = () => {
      areaPanel.hidden = true;
      const b = map.areas.find(x => x.id === a.id);
      for (const x of map.areas) x.el.setAttribute('aria-expanded', 'false');
      if (b) b.el.focus();
    };
    areaPanel.scrollIntoView({ block: 'nearest' });
    f.qty.focus();
    announce(`${a.name}: ` + t('Standing: {n} of {cap} places left, {price} each. Choose how many tickets.', { n: a.available, cap: a.capacity, price: money(a.base_price) }));
  };
  const map = new SeatMap(main.querySelector('#map'), id, seated, {
    announce,
    areas: ev.sections.filter(s => s.kind === 'general'),
    onArea: chooseArea,
    onChange: seats => {
      shown = seats;
      for (const sid of [...chosen.keys()]) if (!seats.some(x => x.id === sid)) chosen.delete(sid);
      sel.innerHTML = seats.map(s => {
        const opts = multi ? typesFor(s) : [];
        return `<li data-seat="${esc(s.id)}"${multi ? ` data-type="${esc(typeOf(s))}"` : ''}>${t('Row {row}, seat {n}', { row: esc(s.row), n: s.number })} — <span class="price">${money(priceOf(s))}</span>
          ${opts.length > 1 ? `<label class="inline">${t('Ticket type')}<span class="sr-only"> ${t('for row {row}, seat {n}', { row: esc(s.row), n: s.number })}</span>
            <select data-seat="${esc(s.id)}">${opts.map(t => `<option value="${esc(t.id)}" ${t.id === typeOf(s) ? 'selected' : ''}>${esc(t.name)}</option>`).join('')}</select></label>` : ''}</li>`;
      }).join('');
      holdBtn.disabled = !seats.length;
      // Signed out, the choice outlives the page's render after sign-in.
      if (!token()) sessionStorage.setItem('selection', JSON.stringify({ event: id, seats: seats.map(x => x.id) }));
    },
  });
  cleanup.push(() => map.close());
  for (const a of map.areas) { a.el.setAttribute('aria-controls', 'areapanel'); a.el.setAttribute('aria-expanded', 'false'); }
  main.querySelector('#tomap').addEventListener('click', e => { e.preventDefault(); main.querySelector('#map canvas').focus(); });
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
    const area = map.areas.find(a => a.id === sid);
    if (area) chooseArea(area);
    else if (s.kind === 'general') main.querySelector('#best').qty.focus();
    else map.showSection(sid);
  };
  main.querySelector('.sections').addEventListener('click', e => {
    const a = e.target.closest('a[data-section]');
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    showSection(a.dataset.section);
  });
  if (sectionID && seated.some(s => s.id === sectionID)) map.showSection(sectionID, false);
  await map.load();
  if (!here()) return;
  priceLegend(main.querySelector('.legend'), map.priceTiers, map.areas);
  // Seats chosen before signing in are chosen again (those still free).
  const kept = JSON.parse(sessionStorage.getItem('selection') || 'null');
  if (kept && kept.event === id && token()) {
    sessionStorage.removeItem('selection');
    const again = kept.seats.filter(sid => map.stateById(sid) === 'available');
    for (const sid of again) map.selected.add(sid);
    if (again.length) { map.changed(); map.requestDraw(); announce(plural(again.length, 'Your chosen seat is still selected.', 'Your {n} chosen seats are still selected.')); }
  }
  const hold = async seatIDs => {
    holdBtn.disabled = true;
    const named = multi ? Object.fromEntries(seatIDs.filter(sid => chosen.has(sid) && chosen.get(sid) !== types[0].id).map(sid => [sid, chosen.get(sid)])) : {};
    await tryHold({ seat_ids: seatIDs, ...(Object.keys(named).length ? { ticket_types: named } : {}) }, err => {
      holdBtn.disabled = false;
      if (!err) return;
      const alts = err.problem && err.problem.alternatives || [];
      showProblem(err, alts.length ? [[t('Take the alternative seats'), () => hold(alts)]] : []);
      map.refresh();
    });
  };
  main.querySelector('#holdform').onsubmit = e => { e.preventDefault(); hold([...map.selected]); };
}

// hotelOffer lists the hotels nearest an event's venue with their rate for
// the show's night (or the nights the fan chose on the hotel screen, that
// room preselected), beside the seats: a room chosen goes into the same
// hold as the seats (a package: every part or none). It returns what the
// hold adds: the chosen stay, or null. A hotel search that cannot answer
// (after the reads' retries) says so in words; one not served (404) shows
// nothing.
function hotelOffer(eventID) {
  const box = main.querySelector('#stay'), list = main.querySelector('#hotels'), guests = main.querySelector('#guests');
  const kept = chosenStay(eventID);
  if (kept && kept.guests) guests.value = String(kept.guests);
  const nights = (kept && kept.nights) || 1, roomCount = (kept && kept.rooms) || 1;
  let offer = null;
  const note = main.querySelector('#staynote');
  const load = async () => {
    try {
      offer = await get(`/v1/events/${encodeURIComponent(eventID)}/hotels?guests=${guests.value}&nights=${nights}`);
    } catch (err) {
      offer = null;
      if (err instanceof ProblemError && err.status === 404) { box.hidden = true; return; }
      note.dataset.error = 'yes';
      note.textContent = t('We could not load the hotels near the venue.') + ' ' + (err instanceof ProblemError ? message(err.problem, err.retryAfter) : words(err));
      list.innerHTML = `<legend>${t('Add a room to your seats: one booking, seats and room, or nothing')}</legend>`
        + `<button type="button" class="secondary" id="hotelsretry">${t('Try again')}</button>`;
      list.querySelector('#hotelsretry').onclick = load;
      box.hidden = false;
      return;
    }
    if (!list.isConnected) return;
    delete note.dataset.error;
    rememberNames(offer.properties);
    const rooms = offer.properties.flatMap(p => p.room_types.filter(r => r.available > 0).map(r => ({ p, r })));
    note.textContent = rooms.length
      ? t('Hotels near the venue for {nights} from {from} to {to}, nearest first.', { nights: plural(nights, '{n} night', '{n} nights'), from: nightDate(offer.checkin), to: nightDate(offer.checkout) })
      : t('No hotel near the venue has a room for that night.');
    const picked = r => kept && kept.property_id === r.p.id && kept.room_type === r.r.id;
    list.innerHTML = `<legend>${t('Add a room to your seats: one booking, seats and room, or nothing')}</legend>`
      + `<label class="hotel"><input type="radio" name="room" value="" ${rooms.some(picked) ? '' : 'checked'}> ${t('No hotel')}</label>`
      + rooms.map(({ p, r }) => `<label class="hotel" data-property="${esc(p.id)}" data-room-type="${esc(r.id)}">
        <input type="radio" name="room" value="${esc(p.id)}|${esc(r.id)}" ${picked({ p, r }) ? 'checked' : ''}> <span><strong>${esc(p.name)}</strong>${p.distance_km != null ? ` · ${p.distance_km} km` : ''}
        · ${esc(r.name)} (${t('up to {n}', { n: r.max_guests })}) · <span class="price" data-amount="${r.price_per_night.amount}">${money(r.price_per_night)}</span> ${t('a night')}
        ${roomCount > 1 ? `· ${plural(roomCount, '{n} room', '{n} rooms')}` : ''} · ${t('{n} left', { n: r.available })}</span></label>`).join('');
    box.hidden = false;
  };
  guests.onchange = load;
  load();
  return () => {
    const v = (list.querySelector('input[name=room]:checked') || {}).value;
    if (!v || !offer) return null;
    const [property_id, room_type] = v.split('|');
    return { property_id, room_type, checkin: offer.checkin, checkout: offer.checkout, rooms: roomCount };
  };
}

// The sandbox's test payment methods: a development shortcut beside the
// payment form, offered only when payments go to the sandbox.
const TEST_METHODS = [
  ['pm_card_visa', 'Visa (succeeds)'],
  ['pm_card_chargeDeclined', 'Declined card'],
  ['pm_card_chargeDeclinedInsufficientFunds', 'Card with insufficient funds'],
  ['pm_card_threeDSecure2Required', '3-D Secure card (your bank asks you to confirm)'],
  ['', 'Pay on the payment page'],
];

async function holdView(id) {
  const here = current();
  const h = await get('/v1/holds/' + encodeURIComponent(id));
  if (!here()) return;
  if (h.status && h.status !== 'PENDING_PAYMENT') { location.replace('#/booking/' + encodeURIComponent(id)); return; }
  // The booking's view names the event and labels the seats (the hold's
  // own answer carries IDs only); without it the IDs stand in.
  const [b, ev, names] = await Promise.all([get('/v1/bookings/' + encodeURIComponent(id)).catch(() => null),
    h.event_id ? get('/v1/events/' + encodeURIComponent(h.event_id)).catch(() => null) : null, stayNames(h.stays)]);
  if (!here()) return;
  // Without the booking's view the hold's own lines stand in, as a
  // booking with no event or labels.
  const summary = orderSummary(b || { items: (h.items || []).map(it => ({ ...it, label: it.seat_id || it.section_id })), total: h.total },
    h.promo_code, { hold: h, types: ev && ev.ticket_types, names });
  // Somewhere to go back to: the event's seats, or the events.
  const back = h.event_id ? '#/event/' + encodeURIComponent(h.event_id) : '#/';
  main.innerHTML = `<h1>${t(h.event_id ? 'Your hold' : 'Your room on hold')}</h1>
    ${summary}
    <div id="qbox"></div>
    <p>${t('Time left to pay')}: <span class="countdown" id="countdown" role="timer" aria-live="off"></span></p>
    <form id="pay" class="pay" aria-label="${t('Payment')}">
      <div id="payment-element" class="payment-element" aria-busy="true"><p class="note">${t('Loading the payment form…')}</p></div>
      <div class="row"><button id="paybtn" disabled>${t('Pay {amount}', { amount: money(h.total) })}</button>
      <button type="button" class="secondary" id="release">${t('Release')}</button></div></form>
    <details id="testpay" class="testpay" hidden><summary>${t('Development: pay with a test payment method')}</summary>
      <form class="row" id="testform"><label>${t('Test method')} <select name="pm">${TEST_METHODS.map(([v, l]) => `<option value="${v}">${esc(t(l))}</option>`).join('')}</select></label>
      <button id="testbtn">${t('Pay {amount} with it', { amount: money(h.total) })}</button></form></details>`;
  const cd = main.querySelector('#countdown'), payBtn = main.querySelector('#paybtn'), testBtn = main.querySelector('#testbtn');
  const slot = main.querySelector('#payment-element');
  let end = new Date(h.expires_at).getTime(), expired = false, busy = false, form = null;
  const tick = () => {
    const s = Math.max(0, Math.round((end - Date.now()) / 1000));
    cd.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
    if (s === 0 && !expired) {
      expired = true; payBtn.disabled = true; testBtn.disabled = true; main.dataset.expired = 'yes';
      showProblem(new ProblemError({ type: '/problems/hold-expired' }, 410),
        [[t(h.event_id ? 'Choose seats again' : 'Back to the events'), () => { location.hash = back; }]]);
      announce(t('Your hold has expired'));
    }
    if (s === 60) announce(t('One minute left to pay'));
  };
  tick();
  const iv = setInterval(tick, 1000); cleanup.push(() => clearInterval(iv));
  const returnURL = location.origin + '/#/booking/' + encodeURIComponent(id);
  // One idempotency key per payment method tried: a retry of the same
  // attempt gets its first answer, another card is another attempt.
  const keys = new Map();
  // The event's questions, answered with the checkout.
  const questions = new Questions(main.querySelector('#qbox'), ev, h, b);
  const checkout = pm => {
    if (!keys.has(pm)) keys.set(pm, newKey());
    const answers = questions.answers();
    return post(`/v1/holds/${encodeURIComponent(id)}/checkout`, { ...(pm ? { payment_method: pm } : {}), return_url: returnURL,
      ...(answers.length ? { answers } : {}) }, keys.get(pm));
  };
  // unanswered says a checkout refused for its answers, beside each one;
  // the next attempt is a new one (nothing was paid).
  const unanswered = (err, pm) => {
    if (!(err instanceof ProblemError) || err.status !== 422 || !questions.showErrors(err)) return false;
    keys.delete(pm);
    const n = err.problem.errors.filter(x => String(x.field).startsWith('answers')).length;
    showProblem(new Error(plural(n, 'Please answer the question marked below before paying. Nothing was charged.',
      'Please answer the {n} questions marked below before paying. Nothing was charged.')));
    announce(t('Please answer the marked questions'));
    return true;
  };
  const declined = (err, pm) => {
    keys.delete(pm); // a declined card may be tried again later, as a new attempt
    showProblem(err);
    announce(t('Card declined. Try another card.'));
  };
  const setBusy = on => { busy = on; payBtn.disabled = on || expired || !form; testBtn.disabled = on || expired; main.dataset.paying = on ? 'yes' : ''; };

  paymentConfig().then(cfg => { if (here()) main.querySelector('#testpay').hidden = !cfg.sandbox; }).catch(() => {});
  PaymentForm.mount(slot, h.total).then(async f => {
    form = f; cleanup.push(() => f.destroy());
    slot.querySelector('.note')?.remove();
    await f.ready;
    if (!here()) return;
    slot.removeAttribute('aria-busy');
    main.dataset.paymentForm = 'ready';
    setBusy(false);
  }).catch(err => {
    slot.innerHTML = '';
    showProblem(err);
  });

  main.querySelector('#pay').onsubmit = async e => {
    e.preventDefault();
    if (busy || !form || expired) return;
    setBusy(true);
    try {
      const pm = await form.paymentMethod(sessionStorage.getItem('email') || '');
      if (pm.error) {
        // The form shows what is wrong with the card; a problem from the
        // provider (a refused card) also goes to the banner.
        if (pm.error.type !== 'validation_error') showProblem(new Error(pm.error.message));
        return;
      }
      let res;
      try { res = await checkout(pm.id); } catch (err) {
        if (err instanceof ProblemError && String(err.problem.type).endsWith('/payment-declined')) { declined(err, pm.id); return; }
        if (unanswered(err, pm.id)) return;
        throw err;
      }
      clearProblem(); questions.showErrors(null);
      if (res.expires_at) end = new Date(res.expires_at).getTime();
      const pay = res.payment || {};
      if (pay.status === 'requires_action' && pay.client_secret) {
        announce(t('Your bank asks you to confirm the payment.'));
        const r = await form.confirm(pay.client_secret);
        if (r.error) {
          showProblem(new Error((r.error.message || t('Your bank did not confirm the payment.')) + ' ' + t('Your seats are still held: you can try again or use another card.')));
          keys.delete(pm.id);
          return;
        }
      } else if (pay.next_action) {
        // A redirect the provider asks for (not a 3-D Secure modal).
        location.assign(pay.next_action); return;
      }
      location.hash = '#/booking/' + res.booking_id;
    } catch (err) {
      showProblem(err);
    } finally {
      if (location.hash.startsWith('#/hold/')) setBusy(false);
    }
  };

  main.querySelector('#testform').onsubmit = async e => {
    e.preventDefault();
    const pm = e.target.pm.value;
    setBusy(true);
    try {
      const res = await checkout(pm);
      clearProblem(); questions.showErrors(null);
      if (res.expires_at) end = new Date(res.expires_at).getTime();
      // 3-D Secure or the hosted page: the sandbox's page, in this tab; it
      // sends the fan back to the booking page, which follows the saga.
      const next = res.payment && res.payment.next_action;
      if (next) { sessionStorage.setItem('verify:' + res.booking_id, next); location.assign(next); return; }
      location.hash = '#/booking/' + res.booking_id;
    } catch (err) {
      if (err instanceof ProblemError && String(err.problem.type).endsWith('/payment-declined')) { declined(err, pm); e.target.pm.focus(); return; }
      if (unanswered(err, pm)) return;
      showProblem(err);
    } finally {
      if (location.hash.startsWith('#/hold/')) setBusy(false);
    }
  };
  main.querySelector('#release').onclick = async () => {
    try { await request('DELETE', '/v1/holds/' + encodeURIComponent(id)); location.hash = back; } catch (err) { showProblem(err); }
  };
}

const FINAL = ['PAID', 'FAILED', 'CANCELLED', 'REFUNDED', 'EXPIRED'];
const EXPLAIN = {
  AUTHORISED: 'Payment authorised, confirming your seats…',
  PENDING_PAYMENT: 'Waiting for the payment…',
};
const explainStatus = s => EXPLAIN[s] ? t(EXPLAIN[s]) : '';

async function bookingView(id) {
  // Back from the provider's page: its verdict is in the query string.
  const back = new URLSearchParams(location.search).get('redirect_status');
  if (location.search) history.replaceState(null, '', location.pathname + location.hash);
  main.innerHTML = `<h1>${t('Your booking')}</h1><div id="bsummary"></div><p>${t('Status')}: <span class="status" id="bstatus" aria-live="polite">…</span></p>
    <p id="bnote" class="note"></p><ul class="tickets" id="tickets"></ul>`;
  const st = main.querySelector('#bstatus'), note = main.querySelector('#bnote');
  const show = s => { st.dataset.status = s; st.textContent = statusText(s); };
  let summarised = false, names = {};
  let stop = false; cleanup.push(() => { stop = true; });
  let offered = false;
  // The hold's own view has the lines' types and fees and the tax; the
  // event's page names the types.
  const hold = get('/v1/holds/' + encodeURIComponent(id)).catch(() => null);
  // The server holds each read until the booking changes (up to 20 s), so
  // the page hears of the payment and the tickets the moment they happen.
  let b = null, etag = null;
  for (let i = 0; !stop; i++) {
    const began = Date.now();
    // Back from a failed bank check, the page looks again every second for
    // a moment before it says so (below), so it waits a second at most.
    const r = await watch('/v1/bookings/' + encodeURIComponent(id), etag, back === 'failed' ? 1 : 20);
    if (stop) return;
    if (r.data) {
      b = r.data; etag = r.etag;
    } else if (Date.now() - began < 1000) {
      // Unchanged, and answered early (a server that does not wait): a
      // pause before asking again.
      await new Promise(res => setTimeout(res, Math.min(2000, 300 + i * 100)));
      if (stop) return;
    }
    if (!summarised) {
      const [h, ev] = await Promise.all([hold, b.event_id ? get('/v1/events/' + encodeURIComponent(b.event_id)).catch(() => null) : null]);
      names = await stayNames((h && h.stays) || b.vouchers);
      if (stop) return;
      main.querySelector('#bsummary').innerHTML = orderSummary(b, b.promo_code, { hold: h, types: ev && ev.ticket_types, names });
      summarised = true;
    }
    show(b.status);
    note.textContent = explainStatus(b.status);
    const pay = b.payment || {};
    const verify = sessionStorage.getItem('verify:' + id);
    if (verify && !offered && pay.status === 'REQUIRES_ACTION' && !main.querySelector('#verify')) {
      const p = document.createElement('p');
      p.innerHTML = `${t('Your bank needs to confirm this payment:')} <a id="verify">${t('Confirm the payment')}</a>.`;
      p.querySelector('a').href = verify; note.after(p);
    }
    // Declined, or the bank's check failed: the seats stay held until the
    // hold expires, so another card may still pay for them.
    const failed = b.status === 'PENDING_PAYMENT' && (pay.status === 'FAILED' || (back === 'failed' && i > 2));
    if (failed) {
      // One message, not three: the bank's check is over, so neither
      // "confirm the payment" nor "waiting" applies any more.
      note.textContent = '';
      st.textContent = t('Payment not completed');
      sessionStorage.removeItem('verify:' + id);
      const v = main.querySelector('#verify'); if (v) v.parentElement.remove();
    }
    if (failed && !offered) {
      offered = true;
      showProblem(new Error(t('The payment did not go through. Your seats are still held: you can pay with another card.')),
        [[t('Try another card'), () => { location.hash = '#/hold/' + encodeURIComponent(id); }]]);
    }
    // PAID is set when the seats are sold; the tickets are issued a moment
    // later (after the capture), so the page waits for one per seat.
    const issuing = b.status === 'PAID' && b.tickets.length < (b.seat_ids || []).length;
    if (issuing) st.textContent = t('Paid (issuing your tickets…)');
    // A cancelled booking whose payment is still captured is being
    // refunded: the page follows it to REFUNDED (and its credit note).
    const refunding = b.status === 'CANCELLED' && b.payment && b.payment.status === 'CAPTURED';
    if (refunding) { st.textContent = t('Cancelled (refunding your payment…)'); note.textContent = ''; }
    if (FINAL.includes(b.status) && !issuing && !refunding) {
      show(b.status);
      note.textContent = '';
      sessionStorage.removeItem('verify:' + id);
      const v = main.querySelector('#verify'); if (v) v.parentElement.remove();
      if (b.status === 'PAID') {
        clearProblem(); showTickets(main.querySelector('#tickets'), b.tickets.map(t => ({ ...t, event_id: b.event_id, event: t.event || b.event, booking_id: b.booking_id })));
        if ((b.vouchers || []).length) {
          main.querySelector('#tickets').insertAdjacentHTML('afterend', `<h2>${t('Your hotel')}</h2><ul class="lines" id="vouchers">${b.vouchers.map(v =>
            `<li data-property="${esc(v.property_id)}"><span>${esc(names[v.property_id] || v.property_id)}, ${esc(names[v.property_id + '|' + v.room_type] || v.room_type)},
            ${esc(t('{from} to {to}', { from: nightDate(v.checkin), to: nightDate(v.checkout) }))}</span>
            <span>${t('confirmation')} <strong>${esc(v.confirmation)}</strong></span></li>`).join('')}</ul>`);
        }
        showCancellation(b); announce(t('Payment complete. Your tickets are ready.'));
      }
      const docs = documentsBox(b, cleanup);
      if (docs) main.querySelector('#tickets').after(docs);
      if (b.status === 'FAILED') showProblem(new Error(t('The payment failed. Your seats were released.')));
      if (b.status === 'EXPIRED') showProblem(new ProblemError({ type: '/problems/hold-expired' }, 410));
      return;
    }
    // A server that does not wait answers at once: the page then asks again
    // after a pause, as it did before waiting existed.
    if (Date.now() - began < 1000 && !etag) await new Promise(res => setTimeout(res, Math.min(2000, 300 + i * 100)));
  }
}

// showCancellation states a paid booking's cancellation terms (until when,
// how much comes back) before the fan confirms, and after the cancel shows
// the booking as it then stands.
function showCancellation(b) {
  const c = b.cancellation; if (!c) return;
  const box = document.createElement('section'); box.className = 'cancel'; box.setAttribute('aria-label', t('Cancellation'));
  const until = esc(when(c.deadline, b.event && b.event.timezone, b.event && b.event.venue && b.event.venue.city));
  if (!c.allowed) {
    box.innerHTML = `<h2>${t('Cancellation')}</h2><p id="terms">${t('Cancellation closed on {date}.', { date: until })}</p>`;
    main.append(box); return;
  }
  box.innerHTML = `<h2>${t('Cancellation')}</h2><p id="terms">${t('You can cancel until {date}. We refund {amount} to your card.', { date: until, amount: `<strong>${money(c.refund)}</strong>` })}</p>
    <button class="secondary" id="cancelbtn">${t('Cancel this booking')}</button>`;
  main.append(box);
  const btn = box.querySelector('#cancelbtn');
  btn.onclick = async () => {
    if (btn.dataset.sure !== 'yes') { btn.dataset.sure = 'yes'; btn.textContent = t('Yes, cancel and refund {amount}', { amount: money(c.refund) }); return; }
    btn.disabled = true;
    try {
      await post(`/v1/bookings/${encodeURIComponent(b.booking_id)}/cancel`, {}, newKey());
      announce(t('Booking cancelled')); route();
    } catch (err) { btn.disabled = false; showProblem(err); }
  };
}

// showTickets lists tickets with their rotating QR codes, computed on this
// device from its wallet key (wallet.js), so they keep changing at a door
// with no signal. Online, the page asks every code period whether this
// device still holds the ticket: one moved to another device or revoked
// stops showing a code at once, with a way to move it back here.
// Offline, the kept key serves; a ticket never opened on this device says
// to open it once online.
function showTickets(ul, tickets) {
  ul.innerHTML = tickets.map(t => `<li>${t.event ? eventLine(t.event) : ''}<h3>${esc(t.label || tr('Seat') + ' ' + (t.seat_id || tr('general admission')))}</h3>
    ${t.attendee ? `<p class="attendee">${tr('Attendee')}: <strong>${esc(t.attendee)}</strong></p>` : ''}
    <img data-ticket="${esc(t.id)}" data-seat="${esc(t.seat_id || '')}" alt="${tr('Entry QR code for {what}', { what: esc(t.label || t.seat_id || tr('general admission')) })}">
    <p class="qrstate" role="status" data-state="loading"></p></li>`).join('');
  for (const img of ul.querySelectorAll('img')) {
    const t = tickets.find(x => x.id === img.dataset.ticket);
    const state = img.nextElementSibling;
    let w = null, opened = false, drawTimer, checkTimer, failures = 0, stopped = false;
    const say = (key, text) => { if (state.dataset.state !== key || state.textContent !== text) { state.dataset.state = key; state.textContent = text; } };
    const later = (timer, fn, ms) => { clearTimeout(timer); return stopped ? 0 : setTimeout(fn, ms); };
    const draw = async () => {
      if (stopped || !w) return;
      const c = await wallet.code(w, Date.now());
      if (stopped || !w) return;
      if (img.dataset.payload !== c.payload) { img.src = wallet.qrDataURL(c.payload); img.dataset.payload = c.payload; }
      img.classList.remove('stale');
      if (failures) say('offline', tr('No connection. Your code still changes on this phone and works at the door.'));
      else say('live', '');
      drawTimer = later(drawTimer, draw, Math.max(250, c.expires - Date.now() + 50));
    };
    const refuse = err => {
      wallet.forget(t.id); w = null; clearTimeout(drawTimer);
      img.classList.add('stale'); img.removeAttribute('src'); delete img.dataset.payload;
      say('refused', message(err.problem, err.retryAfter));
      if (err.status === 409) {
        const move = document.createElement('button'); move.className = 'secondary'; move.textContent = tr('Show it on this device instead');
        move.onclick = () => { move.remove(); check(true); };
        state.append(' ', move);
      }
    };
    // check asks the server whether this device still holds the ticket
    // (without moving it), opens the wallet when it needs a key (or when
    // the fan moves the ticket here), and comes back every code period.
    const check = async (moveHere = false) => {
      if (stopped) return;
      if (!wallet.signedIn()) { w = wallet.stored(t.id); failures = 1; if (w) draw(); else say('offline', tr('Sign in to show this ticket.')); return; }
      try {
        if (!moveHere) await wallet.status(t);
        if (moveHere || !opened) { w = await wallet.open(t); opened = true; }
        failures = 0;
        draw();
        checkTimer = later(checkTimer, check, 15000);
      } catch (err) {
        if (stopped) return;
        if (err instanceof ProblemError && [403, 404, 409, 410].includes(err.status)) { refuse(err); return; }
        failures++;
        w = w || wallet.stored(t.id);
        if (w) draw();
        else say('offline', tr('No connection, and this ticket was never opened on this phone: open it once while online.'));
        checkTimer = later(checkTimer, check, Math.min(30000, 1000 * 2 ** Math.min(failures - 1, 5)));
      }
    };
    const online = () => { if (failures) checkTimer = later(checkTimer, check, 0); };
    window.addEventListener('online', online);
    check();
    cleanup.push(() => { stopped = true; clearTimeout(drawTimer); clearTimeout(checkTimer); window.removeEventListener('online', online); });
  }
}

// ticketsView lists the fan's valid tickets; with no connection (or no
// session, as when the installed app is opened at the door) it shows the
// tickets whose keys this device keeps.
async function ticketsView() {
  const here = current();
  main.innerHTML = `<h1>${t('My tickets')}</h1><ul class="tickets" id="tickets"></ul>`;
  const ul = main.querySelector('#tickets');
  const kept = () => wallet.all().map(w => ({ id: w.ticket_id, label: w.label, seat_id: w.seat_id, event: w.event, booking_id: w.booking_id }));
  let out;
  if (!token() || navigator.onLine === false) {
    out = null;
  } else {
    try { out = await get('/v1/me/tickets'); } catch (err) { if (!(err instanceof OfflineError)) throw err; out = null; }
    if (!here()) return;
  }
  if (!out) {
    const mine = kept();
    if (!mine.length) { main.append(t(token() ? 'No connection, and no ticket was opened on this device yet.' : 'Sign in to see your tickets.')); return; }
    const note = document.createElement('p'); note.className = 'note'; note.id = 'keptnote';
    note.textContent = t('Showing the tickets kept on this device. Their codes work at the door without a connection.');
    main.insertBefore(note, ul);
    showTickets(ul, mine);
    return;
  }
  const [handed, listings] = await Promise.all([transfers.mine().catch(() => []), resale.mine()]);
  if (!here()) return;
  const reload = text => { announce(text); route(); };
  transfers.receivedList(main, handed, reload);
  if (!out.tickets.length) { ul.innerHTML = `<li>${t('No tickets yet.')}</li>`; return; }
  const valid = out.tickets.filter(t => t.status === 'VALID');
  showTickets(ul, valid);
  for (const t of out.tickets.filter(t => t.status === 'TRANSFERRED')) {
    const li = document.createElement('li'); li.dataset.status = 'TRANSFERRED'; li.className = 'gone';
    li.innerHTML = `${t.event ? eventLine(t.event) : ''}<h3>${esc(t.label || tr('Seat') + ' ' + (t.seat_id || tr('general admission')))}</h3>
      <p>${tr((listings || []).some(l => l.ticket_id === t.id && l.status === 'SOLD') ? 'Sold on resale to another fan'
        : 'Sent to someone else')}: ${tr('it no longer opens the door.')}</p>`;
    ul.append(li);
  }
  // A listed ticket opens no door: its listing instead of a code.
  for (const t of out.tickets.filter(t => t.status === 'LISTED')) {
    const li = document.createElement('li'); li.dataset.status = 'LISTED'; li.dataset.ticket = t.id;
    wallet.forget(t.id); // the gate refuses it while listed; a withdrawn ticket opens its wallet again
    li.innerHTML = `${t.event ? eventLine(t.event) : ''}<h3>${esc(t.label || tr('Seat') + ' ' + (t.seat_id || tr('general admission')))}</h3>`;
    resale.listedControls(li, (listings || []).find(l => l.ticket_id === t.id && l.status === 'ACTIVE'), reload);
    ul.append(li);
  }
  for (const li of ul.querySelectorAll('li:not([data-status])')) {
    const id = li.querySelector('img[data-ticket]').dataset.ticket;
    const sending = handed.find(x => x.ticket_id === id && x.direction === 'sent' && x.status === 'PENDING');
    transfers.sendControls(li, id, sending, reload);
    if (listings && !sending) resale.sellControls(li, valid.find(t => t.id === id), reload);
  }
  if (listings && listings.length) {
    const p = document.createElement('p'); p.innerHTML = `${t('Tickets you listed for resale, and what you were paid:')} <a href="#/listings">${t('My listings')}</a>.`;
    main.insertBefore(p, ul);
  }
  const bookings = [...new Set(valid.map(t => t.booking_id))];
  const box = document.createElement('div');
  box.innerHTML = `<h2>${t('Your bookings')}</h2><p>${t('To cancel, open the booking: it shows until when you can and what is refunded.')}</p>` +
    bookings.map(b => `<p><a data-booking="${esc(b)}" href="#/booking/${encodeURIComponent(b)}">${t('Booking')} ${esc(b.slice(0, 8))}</a></p>`).join('');
  main.append(box);
}

// queueView is the waiting room of a metered event: the live place in
// line and the estimated wait, then on to the seat map with a pass.
async function queueView(id) {
  const here = current();
  const ev = await get('/v1/events/' + encodeURIComponent(id));
  if (!here()) return;
  main.innerHTML = `<h1>${t('Waiting room')}</h1><p><strong>${esc(ev.title)}</strong> · ${esc(ev.venue)}, ${esc(ev.city)}</p>
    <div class="queue" id="queue">
      <p id="qstate" data-status="joining">${t('Joining the line…')}</p>
      <p id="qwait"></p>
      <progress id="qbar" max="1" value="0" aria-label="${t('Progress through the line')}"></progress>
    </div>
    <p class="note" id="qconn" role="status"></p>
    <p class="note">${t('Keep this page open: your place is kept while it is. You do not need to refresh.')}</p>`;
  if (!token()) { main.querySelector('#qstate').textContent = t('Please sign in to join the line.'); return; }
  const state = main.querySelector('#qstate'), wait = main.querySelector('#qwait'), bar = main.querySelector('#qbar');
  const conn = main.querySelector('#qconn');
  let first = 0, lastMinutes = -1;
  const q = new Queue(id, {
    onState: st => {
      state.dataset.status = st.status;
      switch (st.status) {
        case 'waiting': {
          if (st.opens_at && new Date(st.opens_at) > new Date()) {
            state.textContent = t('The sale opens {date}. Everyone who is here by then gets a random place.', { date: when(st.opens_at) });
            wait.textContent = ''; break;
          }
          first = Math.max(first, st.position);
          state.dataset.position = String(st.position);
          state.textContent = st.position <= 1 ? t('You are next in line.') : t('You are number {n} in line.', { n: st.position.toLocaleString(locale()) });
          const m = Math.ceil((st.estimated_wait_seconds || 0) / 60);
          wait.textContent = st.estimated_wait_seconds > 0 ? plural(m, 'Estimated wait: about {n} minute.', 'Estimated wait: about {n} minutes.') : '';
          bar.value = first > 1 ? 1 - (st.position - 1) / first : 0;
          // Screen readers hear the place when the wait's minute changes,
          // not on every push.
          if (m !== lastMinutes) { lastMinutes = m; announce(state.textContent + ' ' + wait.textContent); }
          break;
        }
        case 'admitted': case 'offered':
          state.textContent = t(st.status === 'offered' ? 'Seats came back and they are offered to you!' : 'It is your turn!');
          wait.textContent = t('Choose your seats before {time}.', { time: new Date(st.pass_expires_at).toLocaleTimeString(locale()) });
          bar.value = 1;
          announce(t('It is your turn. Opening the seat map.'));
          location.hash = '#/event/' + encodeURIComponent(id);
          break;
        case 'sold_out':
          state.textContent = t('Sold out.');
          wait.textContent = '';
          announce(t('The event is sold out'));
          waitlistForm(id, wait);
          break;
      }
    },
    onConnection: (c, secs) => {
      conn.dataset.state = c;
      conn.textContent = { live: t('Connected: your place updates live.'), checking: t('Checking your browser…'),
        reconnecting: secs ? t('Connection lost. Reconnecting in {n} s; your place is kept.', { n: secs }) : t('Connection lost. Reconnecting; your place is kept.') }[c] || '';
    },
    onError: err => showProblem(err),
  });
  cleanup.push(() => q.close());
  await q.start();
}

// waitlistForm offers a sold-out event's waitlist: the fan picks how many
// seats, joins, and the page then asks every few seconds whether seats came
// back for them; an offer carries a pass like an admission and opens the
// seat map with it.
function waitlistForm(id, where) {
  where.innerHTML = `<form id="waitlist" class="inline"><label>${t('Seats')} <select name="qty">
      ${[1, 2, 3, 4, 5, 6].map(n => `<option>${n}</option>`).join('')}</select></label>
    <button type="submit">${t('Join the waitlist')}</button></form><span id="wlstate" role="status"></span>`;
  const form = where.querySelector('#waitlist'), msg = where.querySelector('#wlstate');
  form.addEventListener('submit', async e => {
    e.preventDefault();
    form.querySelector('button').disabled = true;
    try {
      const w = await post('/v1/events/' + encodeURIComponent(id) + '/waitlist', { quantity: Number(form.qty.value) });
      form.hidden = true;
      msg.dataset.status = w.status;
      msg.textContent = w.status === 'WAITING'
        ? plural(w.quantity, 'You are number {pos} on the waitlist for {n} seat. If seats come back we offer them to you here and by email; keep this page open.',
          'You are number {pos} on the waitlist for {n} seats. If seats come back we offer them to you here and by email; keep this page open.', { pos: w.position })
        : t('Seats are being offered to you.');
      announce(msg.textContent);
      const timer = setInterval(async () => {
        try {
          const st = await request('GET', '/v1/events/' + encodeURIComponent(id) + '/queue');
          if (st.status !== 'offered' || !st.pass) return;
          clearInterval(timer);
          savePass(id, st.pass, st.pass_expires_at);
          announce(t('Seats came back and they are offered to you. Opening the seat map.'));
          location.hash = '#/event/' + encodeURIComponent(id);
        } catch { /* the next poll retries */ }
      }, 3000);
      cleanup.push(() => clearInterval(timer));
    } catch (err) {
      form.querySelector('button').disabled = false;
      showProblem(err);
    }
  });
}

// needsQueue says whether the fan must go through the event's waiting room
// before seeing its seat map: a metered event and no live pass.
async function needsQueue(id) {
  if (passFor(id)) return false;
  const ev = await get('/v1/events/' + encodeURIComponent(id));
  return !!ev.metered;
}

// pendingHold shows, in the header, the fan's hold still waiting for
// payment with its time left, so it is one press away from any page.
let pendingTimer;
async function pendingHold() {
  const link = document.getElementById('pendinghold');
  clearInterval(pendingTimer); link.hidden = true;
  if (!token()) return;
  const here = current();
  const out = await get('/v1/me/bookings?limit=10').catch(() => null);
  if (!here()) return;
  const h = out && out.bookings.find(b => b.status === 'PENDING_PAYMENT' && b.expires_at && new Date(b.expires_at) > Date.now());
  if (!h || location.hash === '#/hold/' + h.booking_id) return;
  link.href = '#/hold/' + encodeURIComponent(h.booking_id);
  const tick = () => {
    const s = Math.max(0, Math.round((new Date(h.expires_at).getTime() - Date.now()) / 1000));
    link.textContent = t('Your hold: {time} left', { time: `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}` });
    if (s === 0) { clearInterval(pendingTimer); link.hidden = true; }
  };
  tick(); link.hidden = false; pendingTimer = setInterval(tick, 1000);
}

async function route() {
  navigation++;
  const here = current();
  for (const f of cleanup.splice(0)) f();
  pendingHold();
  const parts = location.hash.replace(/^#\/?/, '').replace(/\?.*$/, '').split('/').map(decodeURIComponent);
  try {
    switch (parts[0]) {
      case 'event':
        // Resale tickets are not behind the waiting room (resale.js).
        if (parts[2] === 'resale') { await resale.eventView(main, parts[1], { signedIn: !!token(), showProblem, clearProblem, here }); break; }
        // Hotels are not seats: not behind the waiting room either.
        if (parts[2] === 'hotels') { await hotelsView(main, parts[1], { showProblem, clearProblem, announce, here }); break; }
        if (await needsQueue(parts[1])) { if (here()) location.replace('#/queue/' + encodeURIComponent(parts[1])); return; }
        if (!here()) return;
        await eventView(parts[1], parts[2]); break;
      case 'queue': await queueView(parts[1]); break;
      case 'hold': await holdView(parts[1]); break;
      case 'booking': await bookingView(parts[1]); break;
      case 'tickets': await ticketsView(); break;
      case 'listings': await resale.listingsView(main, !!token()); break;
      case 'transfer': await transfers.transferView(main, parts[1], !!token()); break;
      case 'bookings':
        if (!token()) { main.innerHTML = `<h1>${t('My bookings')}</h1><p>${t('Sign in to see your bookings.')}</p>`; break; }
        await bookingsView(main, get); break;
      default: await eventsView();
    }
  } catch (err) { if (here()) errorView(err); }
}

window.addEventListener('hashchange', () => { clearProblem(); route(); });
// The language: the header's fixed texts now, and a switch that shows
// every page again in the other language.
translatePage();
document.querySelector('header.top').append(langSwitch(() => { clearProblem(); renderWho(); route(); }));
// The skip link moves the focus, not the address (the router owns the hash).
document.getElementById('skip').addEventListener('click', e => { e.preventDefault(); main.focus(); });
// A return from the issuer (?code= or ?error=) is finished before the first
// view, so it renders signed in.
finishSignIn().catch(showProblem).finally(() => { renderWho(); route(); });

// The service worker keeps the app opening offline (sw.js); without one
// (an old browser, a private window) the app works online as before.
if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(err => console.warn('no offline app:', err));
