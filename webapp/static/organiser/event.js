// An event's own pages: its details and publishing, blocking seats on the
// map, promotions, the live sales dashboard, the door during the show,
// and cancelling it while
// following the refunds.
import { get, post, request } from '/app/api.js';
import { SeatMap, drawSeat } from '/app/seatmap.js';
import { main, esc, announce, clearProblem, showProblem, fieldErrors, money, minor, digits, whenIn, isoOf, download, badge, labelCells, STATUS_TEXT, current } from './ui.js';
import { editPage, typesText, attendeesPage } from './catalogue.js';
import { ordersPage } from './orders.js';
import { t, plural, locale } from '/app/i18n.js';

const TABS = [['', 'Overview'], ['edit', 'Edit'], ['seats', 'Seats'], ['promotions', 'Promotions'], ['sales', 'Sales'], ['orders', 'Orders'], ['attendees', 'Attendees'], ['door', 'Door'], ['cancel', 'Cancel']];

// eventView renders the event's page named by tab; ctx.cleanup takes what
// must stop when the view is left.
export async function eventView(id, tab, ctx) {
  const here = current();
  const ev = await get('/v1/admin/events/' + encodeURIComponent(id));
  if (!here()) return;
  const base = '#/event/' + encodeURIComponent(id);
  main.innerHTML = `<p class="crumbs"><a href="#/">${t('Your events')}</a></p>
    <h1>${esc(ev.title)} ${badge(ev.status)}</h1>
    <nav class="tabs" aria-label="${t('Event pages')}">${TABS.map(([path, label]) =>
      `<a href="${base}${path ? '/' + path : ''}" ${path === tab ? 'aria-current="page"' : ''}>${t(label)}</a>`).join('')}</nav>
    <div id="page"></div>`;
  const page = main.querySelector('#page');
  switch (tab) {
    case 'edit': return editPage(page, ev);
    case 'attendees': return attendeesPage(page, ev);
    case 'orders': return ordersPage(page, ev, ctx);
    case 'seats': return seatsPage(page, ev, ctx);
    case 'promotions': return promotionsPage(page, ev);
    case 'sales': return salesPage(page, ev, ctx);
    case 'door': return doorPage(page, ev, ctx);
    case 'cancel': return cancelPage(page, ev, ctx);
    default: return overviewPage(page, ev);
  }
}

function overviewPage(page, ev) {
  const row = (k, v) => `<div><dt>${t(k)}</dt><dd>${v}</dd></div>`;
  page.innerHTML = `<dl class="facts">
      ${row('Status', badge(ev.status))}
      ${row('Artist', esc(ev.artist) || '—')}${row('Genre', esc(ev.genre) || '—')}
      ${row('Starts', whenIn(ev.starts_at, ev.timezone))}${row('On sale from', whenIn(ev.onsale_at, ev.timezone))}${row('Off sale at', whenIn(ev.offsale_at, ev.timezone))}
      ${row('Cancellation deadline', whenIn(ev.cancellation_deadline, ev.timezone))}
      ${row('Tickets per customer', ev.per_customer_limit)}${row('Hold time', t('{n} seconds', { n: ev.hold_ttl_seconds }))}
      ${row('Waiting room', t(ev.metered ? 'Yes' : 'No'))}
      ${row('Capacity', t('{n} numbered seats', { n: ev.seats }) + (ev.general_capacity ? ', ' + t('{n} standing', { n: ev.general_capacity }) : '') + ' ' + t('in {n} sections', { n: ev.sections }))}
      ${row('Prices', `<ul class="plain" id="prices">${Object.entries(ev.prices).sort().map(([c, p]) =>
        `<li data-category="${esc(c)}">${esc(c)}: ${money(p.amount, p.currency)}</li>`).join('')}</ul>`)}
      ${row('Ticket types', typesText(ev))}
      ${row('Service fee', `<span id="servicefee">${ev.service_fee && ev.service_fee.amount ? money(ev.service_fee.amount, ev.service_fee.currency) + ' ' + t('per ticket') : t('None')}</span>`)}
      ${row('Re-entry', t(ev.reentry ? 'Allowed' : 'No'))}
      ${row('Questions at checkout', (ev.questions || []).length ? `<ul class="plain" id="questionlist">${ev.questions.map(q => `<li data-question="${esc(q.id)}">${esc(q.label)}
        <span class="muted">(${q.per === 'order' ? t('per order') : t('per ticket')}${q.required ? ', ' + t('required') : ''})</span></li>`).join('')}</ul>` : t('None'))}
      ${ev.series_id ? row('Series', `<code>${esc(ev.series_id)}</code>`) : ''}
      ${row('Event ID', `<code>${esc(ev.event_id)}</code>`)}
    </dl>
    <div id="publishbox"></div>
    <form id="resale" novalidate><fieldset><legend>${t('Resale between fans')}</legend>
      <p class="note">${t('Fans who cannot come may resell their tickets on Encore, at no more than the cap, before the listings close. Encore keeps the fee from each resale. You can change this at any time.')}</p>
      <label class="check"><span><input type="checkbox" name="resale.enabled" ${ev.resale.enabled ? 'checked' : ''}> ${t('Allow resale')}</span></label>
      <label>${t('Price cap, % of face value')} <input name="resale.max_price_percent" type="number" min="0" max="1000" step="0.01" value="${ev.resale.max_price_percent}"></label>
      <label>${t('Fee, % of the resale price')} <input name="resale.fee_percent" type="number" min="0" max="50" step="0.01" value="${ev.resale.fee_percent}"></label>
      <label>${t('Listings close, minutes before the show')} <input name="resale.closes_minutes_before_start" type="number" min="0" step="1" value="${ev.resale.closes_minutes_before_start}"></label>
      <button type="submit" id="saveresale">${t('Save resale settings')}</button>
      <div class="errors" id="resale-errors" role="alert" hidden></div></fieldset></form>`;
  const rf = page.querySelector('#resale');
  rf.hidden = ev.status === 'CANCELLED';
  rf.onsubmit = async e => {
    e.preventDefault();
    const num = n => rf.elements[n].value === '' ? undefined : Number(rf.elements[n].value);
    const body = { resale: { enabled: rf.elements['resale.enabled'].checked, max_price_percent: num('resale.max_price_percent'),
      fee_percent: num('resale.fee_percent'), closes_minutes_before_start: num('resale.closes_minutes_before_start') } };
    const btn = rf.querySelector('#saveresale'); btn.disabled = true;
    try {
      const out = await request('PATCH', '/v1/admin/events/' + encodeURIComponent(ev.event_id), body);
      fieldErrors(rf.querySelector('#resale-errors'), null, rf); clearProblem();
      announce(out.resale.enabled ? t('Resale allowed up to {n}% of face value', { n: out.resale.max_price_percent }) : t('Resale turned off'));
    } catch (err) { if (!fieldErrors(rf.querySelector('#resale-errors'), err, rf)) showProblem(err); }
    btn.disabled = false;
  };
  const box = page.querySelector('#publishbox');
  if (ev.status === 'DRAFT') {
    box.innerHTML = `<p>${t('Fans cannot see a draft. Publishing lists it, shows its seat map, and opens the sale at its on-sale time. The venue, date, prices, ticket types, service fee and currency are fixed from then on:')}
      <a href="#/event/${encodeURIComponent(ev.event_id)}/edit" id="editlink">${t('edit the draft')}</a> ${t('first.')}</p>
      <button id="publish">${t('Publish the event…')}</button>
      <div id="publishconfirm" class="confirm" role="group" aria-labelledby="publishhead" tabindex="-1" hidden>
        <h3 id="publishhead">${t('Publish “{title}”?', { title: esc(ev.title) })}</h3>
        <ul id="publishconsequences">
          <li>${t('Fans see it at once, with its seat map.')}</li>
          <li>${new Date(ev.onsale_at) <= Date.now() ? t('The sale opens at once (its on-sale time, {when}, has passed).', { when: esc(whenIn(ev.onsale_at, ev.timezone)) })
            : t('The sale opens {when}.', { when: esc(whenIn(ev.onsale_at, ev.timezone)) })}</li>
          <li>${t('The venue, date, prices, ticket types, service fee and currency can no longer change.')}</li>
        </ul>
        <div class="row"><button id="confirmpublish">${t('Yes, publish it')}</button>
          <button class="secondary" id="keepdraft">${t('No, keep the draft')}</button></div>
      </div>`;
    const ask = box.querySelector('#publish'), confirm = box.querySelector('#publishconfirm');
    ask.onclick = () => { ask.disabled = true; confirm.hidden = false; confirm.focus(); };
    box.querySelector('#keepdraft').onclick = () => {
      confirm.hidden = true; ask.disabled = false; ask.focus(); announce(t('The event stays a draft'));
    };
    box.querySelector('#confirmpublish').onclick = async e => {
      e.target.disabled = true;
      try {
        const out = await post('/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/publish');
        clearProblem(); announce(t('Published: the event is {status}', { status: t(STATUS_TEXT[out.status] || out.status).toLowerCase() }));
        eventReload();
      } catch (err) { e.target.disabled = false; showProblem(err); }
    };
  } else if (ev.status !== 'CANCELLED') {
    box.innerHTML = `<p>${t('Fans see this event:')} <a href="/#/event/${encodeURIComponent(ev.event_id)}" id="fanlink">${t('open it in the fan app')}</a>.</p>`;
  }
}

// eventReload renders the current page again (after a change).
function eventReload() { window.dispatchEvent(new HashChangeEvent('hashchange')); }

// MAX_SEATS is how many seats the map lets one select: what one block
// request takes.
const MAX_SEATS = 1000;

async function seatsPage(page, ev, ctx) {
  if (ev.status === 'DRAFT' || ev.status === 'CANCELLED') {
    page.innerHTML = `<p>${ev.status === 'DRAFT' ? t('The seat map opens once the event is published (block seats before its on-sale time if you need to).') : t('The event is cancelled: its seats no longer change.')}</p>`;
    return;
  }
  const pub = await get('/v1/events/' + encodeURIComponent(ev.event_id));
  const seated = pub.sections.filter(s => s.kind !== 'general');
  if (!seated.length) { page.innerHTML = `<p>${t('This venue has standing areas only: there are no seats to block.')}</p>`; return; }
  page.innerHTML = `<h2>${t('Block or unblock seats')}</h2>
    <p>${t('A blocked seat is never sold (a camera position, a sight-line problem, a guest list) until you unblock it. Held and sold seats cannot be blocked. Choose seats on the map with the mouse, or Tab to it and use the arrow keys and Enter.')}</p>
    <label>${t('Section')} <select id="section">${seated.map(s => `<option value="${esc(s.id)}">${esc(s.name)}</option>`).join('')}</select></label>
    <div class="maptools"><button class="secondary" id="zin" aria-label="${t('Zoom in')}">+</button><button class="secondary" id="zout" aria-label="${t('Zoom out')}">−</button>
      <button class="secondary" id="zfit">${t('Fit')}</button></div>
    <div class="map" id="map" aria-describedby="maphelp"></div>
    <p id="maphelp" class="sr-only">${t('Selected seats are blocked with the reason below.')}</p>
    <div class="legend" id="legend" aria-hidden="true"></div>
    <form id="blockform" class="stack">
      <h3 id="selhead">${t('Selected seats:')} <span id="selcount">0</span></h3>
      <ul id="selection" class="chips" aria-labelledby="selhead"></ul>
      <label>${t('Reason (kept in the audit log)')} <input name="reason" id="reason" required maxlength="500" autocomplete="off"></label>
      <div class="row"><button id="block" disabled>${t('Block the selected seats')}</button>
        <button type="button" class="secondary" id="clearsel" disabled>${t('Clear the selection')}</button></div>
    </form>
    <h3 id="blockedhead">${t('Blocked seats in this section:')} <span id="blockedcount">0</span></h3>
    <form id="unblockform" class="stack" aria-labelledby="blockedhead">
      <ul id="blocked" class="chips"></ul>
      <label>${t('Reason for unblocking')} <input name="reason" required maxlength="500" autocomplete="off"></label>
      <div class="row"><button id="unblock" disabled>${t('Unblock the checked seats')}</button></div>
    </form>`;
  const legend = page.querySelector('#legend');
  for (const st of ['available', 'selected', 'held', 'sold', 'blocked']) {
    const c = document.createElement('canvas'); c.width = 20; c.height = 20;
    drawSeat(c.getContext('2d'), 10, 10, 8, st);
    const s = document.createElement('span'); s.append(c, ' ' + t(st)); legend.append(s);
  }
  let map = null, observer = null;
  const sel = page.querySelector('#selection'), blockBtn = page.querySelector('#block'), clearBtn = page.querySelector('#clearsel');
  const blockedList = page.querySelector('#blocked'), unblockBtn = page.querySelector('#unblock');
  const seatName = s => t('Row {row}, seat {n}', { row: s.row, n: s.number });
  const showSelection = seats => {
    sel.innerHTML = seats.map(s => `<li data-seat="${esc(s.id)}">${esc(seatName(s))}</li>`).join('');
    page.querySelector('#selcount').textContent = seats.length;
    blockBtn.disabled = clearBtn.disabled = !seats.length;
  };
  // The blocked list follows the map: each bitmap refresh bumps the
  // canvas's data-version.
  const showBlocked = () => {
    if (!map || !map.seats) return;
    const checked = new Set([...blockedList.querySelectorAll('input:checked')].map(i => i.value));
    const blocked = map.seats.filter(s => map.stateById(s.id) === 'blocked');
    blockedList.innerHTML = blocked.map(s => `<li data-seat="${esc(s.id)}"><label class="check"><span><input type="checkbox" value="${esc(s.id)}"
      ${checked.has(s.id) ? 'checked' : ''}> ${esc(seatName(s))}</span></label></li>`).join('') || `<li class="muted">${t('None.')}</li>`;
    page.querySelector('#blockedcount').textContent = blocked.length;
    unblockBtn.disabled = !blockedList.querySelector('input:checked');
  };
  blockedList.addEventListener('change', () => { unblockBtn.disabled = !blockedList.querySelector('input:checked'); });
  const open = async sectionID => {
    if (map) map.close();
    if (observer) observer.disconnect();
    const el = page.querySelector('#map'); el.innerHTML = '';
    map = new SeatMap(el, ev.event_id, sectionID, { announce, onChange: showSelection, max: MAX_SEATS });
    showSelection([]);
    observer = new MutationObserver(showBlocked);
    observer.observe(map.canvas, { attributes: true, attributeFilter: ['data-version'] });
    await map.load();
    showBlocked();
  };
  ctx.cleanup.push(() => { if (map) map.close(); if (observer) observer.disconnect(); });
  page.querySelector('#section').onchange = e => open(e.target.value).catch(showProblem);
  page.querySelector('#zin').onclick = () => map.zoom(1.25);
  page.querySelector('#zout').onclick = () => map.zoom(0.8);
  page.querySelector('#zfit').onclick = () => map.fit();
  clearBtn.onclick = () => { map.selected.clear(); map.draw(); showSelection([]); };
  const change = async (action, seatIDs, reason, btn) => {
    btn.disabled = true;
    try {
      const out = await post(`/v1/admin/events/${encodeURIComponent(ev.event_id)}/seats/${action}`, { seat_ids: seatIDs, reason });
      clearProblem();
      const n = out.changed.length;
      announce((action === 'block' ? plural(n, 'Blocked {n} seat', 'Blocked {n} seats') : plural(n, 'Unblocked {n} seat', 'Unblocked {n} seats')) +
        (n < seatIDs.length ? ' ' + t('({n} already were)', { n: seatIDs.length - n }) : ''));
      return true;
    } catch (err) { showProblem(err); btn.disabled = false; return false; }
  };
  page.querySelector('#blockform').onsubmit = async e => {
    e.preventDefault();
    if (await change('block', [...map.selected], e.target.reason.value.trim(), blockBtn)) {
      map.selected.clear(); showSelection([]); await map.refresh();
    }
  };
  page.querySelector('#unblockform').onsubmit = async e => {
    e.preventDefault();
    const ids = [...blockedList.querySelectorAll('input:checked')].map(i => i.value);
    if (await change('unblock', ids, e.target.reason.value.trim(), unblockBtn)) { e.target.reset(); await map.refresh(); }
  };
  await open(seated[0].id);
}

function discountText(p, currency) {
  return p.discount_bps ? t('{n}% off', { n: p.discount_bps / 100 }) : t('{amount} off each ticket', { amount: money(p.amount_off, currency) });
}

function promotionState(p) {
  const now = Date.now();
  if (p.disabled_at) return ['disabled', t('Disabled')];
  if (p.starts_at && new Date(p.starts_at) > now) return ['scheduled', t('Not started')];
  if (p.ends_at && new Date(p.ends_at) <= now) return ['ended', t('Ended')];
  if (p.used >= p.max_uses) return ['used', t('All used')];
  return ['active', t('Active')];
}

async function promotionsPage(page, ev) {
  const path = '/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/promotions';
  const cur = ev.currency, step = 1 / 10 ** digits(cur);
  page.innerHTML = `<h2>${t('Promotion codes')}</h2>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Promotion codes')}"><table class="list" id="promotions"><caption>${t('Codes of this event')}</caption>
      <thead><tr><th scope="col">${t('Code')}</th><th scope="col">${t('Discount')}</th><th scope="col">${t('Used')}</th><th scope="col">${t('Per account')}</th>
      <th scope="col">${t('Window')}</th><th scope="col">${t('State')}</th><th scope="col"><span class="sr-only">${t('Actions')}</span></th></tr></thead><tbody></tbody></table></div>
    <h2 id="promoformtitle">${t('New code')}</h2>
    <form id="promoform" class="stack" aria-labelledby="promoformtitle">
      <label>${t('Code')} <input name="code" required pattern="[A-Za-z0-9_\\-]{3,40}" autocomplete="off"></label>
      <fieldset><legend>${t('Discount')}</legend>
        <label class="check"><span><input type="radio" name="kind" value="percent" checked> ${t('Percent off')}</span></label>
        <label class="check"><span><input type="radio" name="kind" value="amount"> ${t('Amount off each ticket')} (${esc(cur)})</span></label>
        <label>${t('Value')} <input name="value" type="number" min="${step}" step="${step}" required inputmode="decimal"></label>
      </fieldset>
      <div class="grid">
        <label>${t('Uses in all')} <input name="max_uses" type="number" min="1" max="1000000" value="100" required></label>
        <label>${t('Uses per account')} <input name="per_user" type="number" min="1" max="100" value="1" required></label>
        <label>${t('Starts (optional, {zone} time)', { zone: esc(ev.timezone) })} <input name="starts_at" type="datetime-local"></label>
        <label>${t('Ends (optional, {zone} time)', { zone: esc(ev.timezone) })} <input name="ends_at" type="datetime-local"></label>
      </div>
      <div id="promo-errors" class="errors" tabindex="-1" hidden></div>
      <p class="row"><button id="addpromo">${t('Create the code')}</button>
        <button type="button" class="secondary" id="canceledit" hidden>${t('Cancel the change')}</button></p>
    </form>`;
  const body = page.querySelector('#promotions tbody');
  // editing is the code whose terms the form changes (PATCH), null while it
  // creates a new one; shown holds the list as last read.
  let editing = null, shown = [];
  const list = async () => {
    const { promotions } = await get(path);
    shown = promotions;
    body.innerHTML = promotions.map(p => {
      const [state, text] = promotionState(p);
      return `<tr data-code="${esc(p.code)}"><th scope="row"><code>${esc(p.code)}</code></th><td>${esc(discountText(p, cur))}</td>
        <td>${t('{used} of {max}', { used: p.used, max: p.max_uses })}</td><td>${p.per_user}</td>
        <td>${p.starts_at || p.ends_at ? `${whenIn(p.starts_at, ev.timezone)} – ${whenIn(p.ends_at, ev.timezone)}` : t('Always')}</td>
        <td><span class="badge badge-${state}" data-state="${state}">${text}</span></td>
        <td>${p.disabled_at ? '' : `<button class="secondary" data-edit="${esc(p.code)}">${t('Change')}</button>
          <button class="secondary" data-disable="${esc(p.code)}">${t('Disable')}</button>`}</td></tr>`;
    }).join('') || `<tr><td colspan="7">${t('No codes yet.')}</td></tr>`;
    labelCells(page.querySelector('#promotions'));
  };
  const f = page.querySelector('#promoform');
  const btn = page.querySelector('#addpromo'), cancelEdit = page.querySelector('#canceledit');
  const title = page.querySelector('#promoformtitle');
  const stopEditing = () => {
    editing = null; f.reset(); f.code.readOnly = false;
    title.textContent = t('New code'); btn.textContent = t('Create the code'); cancelEdit.hidden = true;
  };
  cancelEdit.onclick = () => { stopEditing(); f.code.focus(); };
  // Changing a code fills the form with its terms; holds already taken
  // keep their price, so only new holds see the change.
  const startEditing = code => {
    const p = shown.find(x => x.code === code); if (!p) return;
    editing = code;
    f.code.value = code; f.code.readOnly = true;
    f.kind.value = p.discount_bps ? 'percent' : 'amount';
    f.value.value = p.discount_bps ? p.discount_bps / 100 : p.amount_off / 10 ** digits(cur);
    f.max_uses.value = p.max_uses; f.per_user.value = p.per_user;
    title.textContent = t('Change {code}', { code }); btn.textContent = t('Save the changes to {code}', { code }); cancelEdit.hidden = false;
    f.value.focus();
  };
  // Disabling cannot be undone: the first press asks, the second does it.
  body.addEventListener('click', async e => {
    const ed = e.target.closest('button[data-edit]');
    if (ed) { startEditing(ed.dataset.edit); return; }
    const b = e.target.closest('button[data-disable]'); if (!b) return;
    const code = b.dataset.disable;
    if (b.dataset.sure !== 'yes') { b.dataset.sure = 'yes'; b.textContent = t('Press again to disable {code}', { code }); announce(t('Press again to disable {code}; this cannot be undone', { code })); return; }
    b.disabled = true;
    try { await request('DELETE', path + '/' + encodeURIComponent(code)); clearProblem(); announce(t('Code {code} disabled', { code })); await list(); }
    catch (err) { b.disabled = false; showProblem(err); }
  });
  f.onsubmit = async e => {
    e.preventDefault();
    btn.disabled = true;
    const req = { code: f.code.value.trim(), max_uses: +f.max_uses.value, per_user: +f.per_user.value,
      starts_at: isoOf(f.starts_at.value, ev.timezone), ends_at: isoOf(f.ends_at.value, ev.timezone) };
    if (f.kind.value === 'percent') req.percent_off = Number(f.value.value);
    else req.amount_off = { amount: minor(f.value.value, cur), currency: cur };
    try {
      let p;
      if (editing) {
        delete req.code;
        if (!req.starts_at) delete req.starts_at;
        if (!req.ends_at) delete req.ends_at;
        p = await request('PATCH', path + '/' + encodeURIComponent(editing), req);
      } else {
        p = await post(path, req);
      }
      clearProblem(); fieldErrors(page.querySelector('#promo-errors'), null, f);
      announce(editing ? t('Code {code} changed: {discount}, {n} uses; holds already taken keep their price', { code: p.code, discount: discountText(p, cur), n: p.max_uses })
        : t('Code {code} created: {discount}', { code: p.code, discount: discountText(p, cur) }));
      stopEditing(); await list();
    } catch (err) { if (!fieldErrors(page.querySelector('#promo-errors'), err, f)) showProblem(err); }
    finally { btn.disabled = false; }
  };
  await list();
}

const SALES_EVERY = 3000;
const FIELDS = ['capacity', 'sold', 'held', 'blocked', 'available'];

async function salesPage(page, ev, ctx) {
  const path = '/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/sales';
  page.innerHTML = `<h2>${t('Sales')}</h2>
    <p class="row"><span>${t('Updates every {n} seconds.', { n: SALES_EVERY / 1000 })} <span id="updated" class="muted"></span></span>
      <button class="secondary" id="csv">${t('Download as CSV')}</button></p>
    <p id="summary" class="summary" aria-live="polite"></p>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Sales per section')}"><table class="list numbers" id="sales"><caption>${t('Tickets and revenue per section')}</caption>
      <thead><tr><th scope="col">${t('Section')}</th><th scope="col">${t('Capacity')}</th><th scope="col">${t('Sold')}</th><th scope="col">${t('Held')}</th>
        <th scope="col">${t('Blocked')}</th><th scope="col">${t('Available')}</th><th scope="col">${t('Revenue')}</th><th scope="col">${t('Refunded')}</th>
        <th scope="col">${t('Resold')}</th><th scope="col">${t('Resale volume')}</th><th scope="col">${t('Resale fees')}</th></tr></thead>
      <tbody></tbody><tfoot></tfoot></table></div>`;
  const body = page.querySelector('#sales tbody'), foot = page.querySelector('#sales tfoot');
  const line = (s, cur, total) => `<tr data-section="${esc(s.section_id)}"><th scope="row">${total ? t('Total') : esc(s.name || s.section_id)}</th>
    ${FIELDS.map(f => `<td data-field="${f}">${s[f]}</td>`).join('')}
    <td data-field="revenue" data-minor="${s.revenue}">${money(s.revenue, cur)}</td><td data-field="refunded" data-minor="${s.refunded}">${money(s.refunded, cur)}</td>
    <td data-field="resale_sold">${s.resale_sold}</td><td data-field="resale_volume" data-minor="${s.resale_volume}">${money(s.resale_volume, cur)}</td>
    <td data-field="resale_fees" data-minor="${s.resale_fees}">${money(s.resale_fees, cur)}</td></tr>`;
  let last = '', stop = false, timer;
  const poll = async () => {
    try {
      const r = await get(path);
      if (stop) return;
      body.innerHTML = r.sections.map(s => line(s, r.currency)).join('');
      foot.innerHTML = line(r.totals, r.currency, true);
      labelCells(page.querySelector('#sales'));
      const x = r.totals;
      const summary = t('{sold} of {capacity} sold, {held} held, {available} available; revenue {revenue}', { ...x, revenue: money(x.revenue, r.currency) }) +
        (x.refunded ? ', ' + t('refunded {amount}', { amount: money(x.refunded, r.currency) }) : '') +
        (x.resale_sold ? '; ' + t('{n} resold between fans for {volume}, fees {fees}', { n: x.resale_sold, volume: money(x.resale_volume, r.currency), fees: money(x.resale_fees, r.currency) }) : '') + '.';
      // The live region speaks only when the numbers change.
      if (summary !== last) { page.querySelector('#summary').textContent = summary; last = summary; }
      page.querySelector('#updated').textContent = t('Last updated {time}.', { time: new Date().toLocaleTimeString(locale()) });
    } catch (err) { if (!stop) showProblem(err); }
    if (!stop) timer = setTimeout(poll, SALES_EVERY);
  };
  ctx.cleanup.push(() => { stop = true; clearTimeout(timer); });
  page.querySelector('#csv').onclick = () => download(path + '?format=csv', `sales-${ev.event_id}.csv`).catch(showProblem);
  await poll();
}

// DOOR_EVERY is how often the door page asks for new scans.
const DOOR_EVERY = 5000;

// doorPage is the door during the event, from the scans the gates report:
// admitted and inside now, per gate, admissions per minute (the last hour,
// a bar a minute) and who is inside per zone.
async function doorPage(page, ev, ctx) {
  const path = '/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/door?minutes=60';
  page.innerHTML = `<h2>${t('Door')}</h2>
    <form id="reentryform"><label class="check"><span><input type="checkbox" name="reentry" ${ev.reentry ? 'checked' : ''}>
      ${t('Re-entry: a ticket scanned out at the door may come back in')}</span></label>
      <p class="note">${t('The gates follow this from their next ticket list (encore manifest export).')}</p></form>
    <p>${t('Updates every {n} seconds, from what the gates report.', { n: DOOR_EVERY / 1000 })} <span id="dupdated" class="muted"></span></p>
    <p id="doorsum" class="summary" aria-live="polite"></p>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Entries per gate')}"><table class="list numbers" id="gates"><caption>${t('Entries per gate')}</caption>
      <thead><tr><th scope="col">${t('Gate')}</th><th scope="col">${t('In')}</th><th scope="col">${t('Out')}</th><th scope="col">${t('Last scan')}</th></tr></thead><tbody></tbody></table></div>
    <h3>${t('Entries per minute, last hour')}</h3><div id="perminute" class="bars" role="img"></div>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Inside per zone')}"><table class="list numbers" id="zones"><caption>${t('Inside now, per zone')}</caption>
      <thead><tr><th scope="col">${t('Zone')}</th><th scope="col">${t('Inside')}</th></tr></thead><tbody></tbody></table></div>`;
  const re = page.querySelector('#reentryform input');
  re.onchange = async () => {
    re.disabled = true;
    try {
      const out = await request('PATCH', '/v1/admin/events/' + encodeURIComponent(ev.event_id), { reentry: re.checked });
      ev.reentry = out.reentry; clearProblem();
      announce(out.reentry ? t('Re-entry allowed') : t('Re-entry not allowed'));
    } catch (err) { re.checked = !re.checked; showProblem(err); }
    re.disabled = false;
  };
  let last = '', stop = false, timer;
  const poll = async () => {
    try {
      const r = await get(path);
      if (stop) return;
      const tz = ev.timezone;
      page.querySelector('#gates tbody').innerHTML = r.gates.length ? r.gates.map(g => `<tr data-gate="${esc(g.gate_id)}"><th scope="row">${esc(g.gate_id)}</th>
        <td data-field="in">${g.in}</td><td data-field="out">${g.out}</td><td>${esc(whenIn(g.last_scan_at, tz))}</td></tr>`).join('')
        : `<tr><td colspan="4">${t('No scans reported yet.')}</td></tr>`;
      page.querySelector('#zones tbody').innerHTML = r.zones.map(z => `<tr data-zone="${esc(z.zone)}"><th scope="row">${esc(z.zone || t('General'))}</th>
        <td data-field="inside">${z.inside}</td></tr>`).join('');
      labelCells(page.querySelector('#gates')); labelCells(page.querySelector('#zones'));
      const perMinute = new Map();
      for (const m of r.per_minute) perMinute.set(m.minute, (perMinute.get(m.minute) || 0) + m.in);
      const peak = Math.max(1, ...perMinute.values());
      const bars = page.querySelector('#perminute');
      bars.setAttribute('aria-label', t('Entries per minute: peak {n} a minute', { n: Math.max(0, ...perMinute.values()) }));
      bars.innerHTML = [...perMinute].map(([m, n]) => `<span title="${esc(whenIn(m, tz))}: ${n}" data-minute="${esc(m)}" data-in="${n}" class="bar h${Math.round(10 * n / peak)}"></span>`).join('');
      const summary = t('{admitted} admitted, {inside} inside now.', { admitted: r.admitted, inside: r.inside });
      if (summary !== last) { page.querySelector('#doorsum').textContent = summary; last = summary; }
      page.querySelector('#dupdated').textContent = r.last_scan_at ? t('Last scan {when}.', { when: whenIn(r.last_scan_at, tz) }) : '';
    } catch (err) { if (!stop) showProblem(err); }
    if (!stop) timer = setTimeout(poll, DOOR_EVERY);
  };
  ctx.cleanup.push(() => { stop = true; clearTimeout(timer); });
  await poll();
}

// cancelPage cancels the event after a confirmation that names what it
// undoes (the paid bookings refunded and their sum, the tickets revoked,
// the holds released, read from the orders' summary), then shows the
// event cancelled at once (the header's badge) and follows the refunds.
async function cancelPage(page, ev, ctx) {
  const key = 'job:' + ev.event_id;
  if (ev.status === 'CANCELLED') {
    page.innerHTML = `<h2>${t('Cancelled')}</h2><p id="cancelledtext">${t('This event is cancelled: sales stopped and paid bookings are refunded.')}</p><div id="job"></div>`;
    const job = sessionStorage.getItem(key);
    if (job) await follow(page.querySelector('#job'), job, ctx);
    return;
  }
  const { summary: s } = await get('/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/orders?status=PAID');
  page.innerHTML = `<h2>${t('Cancel the event')}</h2>
    <p>${t('Cancelling stops the sale at once, releases every hold, and refunds every paid booking in full.')}
      <strong>${t('It cannot be undone.')}</strong></p>
    <form id="cancelform" class="stack">
      <label>${t('Reason (fans are told; kept in the audit log)')} <textarea name="reason" required maxlength="500" rows="2"></textarea></label>
      <button id="cancelstart" class="danger">${t('Cancel this event…')}</button>
    </form>
    <div id="confirm" class="confirm" role="group" aria-labelledby="confirmhead" aria-describedby="consequences" tabindex="-1" hidden>
      <h3 id="confirmhead">${t('Cancel “{title}”?', { title: esc(ev.title) })}</h3>
      <ul id="consequences">
        <li data-consequence="refunds">${s.paid_bookings ? t('{bookings} refunded in full: {total} back to the fans.', {
          bookings: plural(s.paid_bookings, '{n} paid booking', '{n} paid bookings'), total: money(s.paid_total, ev.currency) })
          : t('No paid bookings: nothing to refund.')}</li>
        <li data-consequence="tickets">${plural(s.valid_tickets, '{n} ticket revoked: it no longer opens the door.', '{n} tickets revoked: they no longer open the door.')}</li>
        <li data-consequence="holds">${s.pending_holds ? plural(s.pending_holds, '{n} open hold released: its fan cannot pay for it any more.', '{n} open holds released: their fans cannot pay for them any more.') : t('No open holds to release.')}</li>
        <li>${t('The sale stops now and every buyer is told, with your reason.')}</li>
        <li><strong>${t('It cannot be undone.')}</strong></li>
      </ul>
      <div class="row"><button class="danger" id="confirmcancel">${t('Yes, cancel the event')}</button>
        <button class="secondary" id="keep">${t('No, keep the event')}</button></div>
    </div>
    <div id="job"></div>`;
  const f = page.querySelector('#cancelform'), confirm = page.querySelector('#confirm');
  f.onsubmit = e => {
    e.preventDefault();
    f.querySelector('#cancelstart').disabled = true;
    confirm.hidden = false; confirm.focus();
  };
  page.querySelector('#keep').onclick = () => {
    confirm.hidden = true; f.querySelector('#cancelstart').disabled = false; f.querySelector('#cancelstart').focus();
    announce(t('The event was not cancelled'));
  };
  page.querySelector('#confirmcancel').onclick = async e => {
    e.target.disabled = true;
    try {
      const out = await post('/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/cancel', { reason: f.reason.value.trim() });
      sessionStorage.setItem(key, out.job_id);
      clearProblem(); confirm.hidden = true; f.hidden = true;
      // The header and the page say what the event is now, not what it was.
      ev.status = 'CANCELLED';
      const head = main.querySelector('h1 .badge'); if (head) head.outerHTML = badge('CANCELLED');
      page.querySelector('h2').textContent = t('Cancelled');
      page.querySelector('h2').insertAdjacentHTML('afterend', `<p id="cancelledtext">${t('This event is cancelled: sales stopped and paid bookings are refunded.')}</p>`);
      announce(t('The event is cancelled; refunding its paid bookings'));
      await follow(page.querySelector('#job'), out.job_id, ctx);
    } catch (err) { e.target.disabled = false; showProblem(err); }
  };
}

// follow shows a job's progress until it is done or failed.
async function follow(box, jobID, ctx) {
  box.innerHTML = `<h3 id="jobhead">${t('Refunds')}</h3>
    <progress id="progress" max="1" value="0" aria-labelledby="jobhead"></progress>
    <p id="jobtext"></p><p id="jobstatus" class="status" data-status="running">${t('Refunding…')}</p>`;
  const bar = box.querySelector('#progress'), text = box.querySelector('#jobtext'), status = box.querySelector('#jobstatus');
  let stop = false; ctx.cleanup.push(() => { stop = true; });
  for (let i = 0; !stop; i++) {
    let job;
    try { job = await get('/v1/admin/jobs/' + encodeURIComponent(jobID)); }
    catch (err) { showProblem(err); return; }
    if (stop) return;
    const finished = job.done + job.failed;
    bar.max = Math.max(1, job.total); bar.value = job.total ? finished : 1;
    bar.setAttribute('aria-valuetext', t('{done} of {total} bookings', { done: finished, total: job.total }));
    text.textContent = job.total ? t('{done} of {total} paid bookings refunded', { done: job.done, total: job.total }) +
      (job.failed ? ', ' + t('{n} failed', { n: job.failed }) : '') + '.' : t('There were no paid bookings to refund.');
    status.dataset.status = job.status;
    if (job.status !== 'running') {
      status.textContent = job.status === 'done' ? (job.failed ? t('Done, {n} refunds failed: support can retry them.', { n: job.failed }) : t('Done: every refund went through.')) : t('The job failed: support can see it and retry.');
      announce(status.textContent);
      return;
    }
    await new Promise(r => setTimeout(r, Math.min(2000, 500 + i * 100)));
  }
}
