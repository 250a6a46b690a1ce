// The organiser's catalogue: an event's edit form (every field of a draft;
// the always-editable ones once published), the ticket types editor it
// shares with the new series form, and the organisation's legal and tax
// settings. Field errors of a refused save are named in a list above the
// form and shown next to the fields they name.
import { get, post, request, ProblemError } from '/app/api.js';
import { main, esc, announce, explain, clearProblem, showProblem, money, minor, digits, whenIn, localInput, isoOf, badge, download, labelCells, current } from './ui.js';
import { t, plural, locale } from '/app/i18n.js';

// translate is t where a list's item is named t.
const translate = t;

// ALWAYS_EDITABLE are the fields a published event may still change
// (organiser.AlwaysEditable); the rest are fixed once published.
const ALWAYS_EDITABLE = ['title', 'artist', 'genre', 'description', 'offsale_at', 'per_customer_limit', 'hold_ttl_seconds', 'resale', 'reentry'];

// major writes minor units as the number an organiser types (45.50).
export const major = (amount, currency) => {
  const d = digits(currency);
  return amount === undefined || amount === null ? '' : (Number(amount) / 10 ** d).toFixed(d);
};

// slug turns a type's name into its ID (Child -> child, "Under 12" -> under-12).
const slug = s => String(s).toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
  .replace(/[^a-z0-9_-]+/g, '-').replace(/^[-_]+|-+$/g, '').slice(0, 40);

let errorSeq = 0;

// parentField is the field a field is part of: prices.stalls of
// prices.stalls.amount, dates of dates[1] ('' at the top).
const parentField = f => {
  const m = f.match(/^(.*?)(\.[^.[\]]*|\[\d+\])$/);
  return m ? m[1] : '';
};

// fieldProblems names a refused save's field errors in box and beside
// each field they name (a field is found by its name, or its parent's:
// ticket_types[1].prices.stalls.amount marks ticket_types[1].prices.stalls;
// a fieldset is named too, so "prices" or "dates" has a place). It answers
// whether there were field errors; null clears them.
export function fieldProblems(form, box, err) {
  for (const el of form.querySelectorAll('.field-error')) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) {
    el.removeAttribute('aria-invalid');
    const keep = (el.dataset.describedby || '').trim();
    if (keep) el.setAttribute('aria-describedby', keep); else el.removeAttribute('aria-describedby');
  }
  const list = err instanceof ProblemError && err.problem.errors || [];
  if (!list.length) { box.hidden = true; box.innerHTML = ''; return false; }
  box.innerHTML = `<h3>${list.length === 1 ? t('One problem to fix') : t('{n} problems to fix', { n: list.length })}</h3>
    <ul>${list.map(e => `<li data-field="${esc(e.field)}"><code>${esc(e.field)}</code>: ${esc(e.message)}</li>`).join('')}</ul>`;
  box.hidden = false;
  for (const e of list) {
    let el = null;
    for (let f = e.field; f && !el; f = parentField(f)) el = form.querySelector(`[name="${CSS.escape(f)}"]`);
    if (!el) continue;
    const msg = document.createElement('span');
    msg.className = 'field-error'; msg.id = 'fielderr' + (++errorSeq); msg.dataset.field = e.field;
    msg.textContent = e.message;
    el.setAttribute('aria-invalid', 'true');
    if (!('describedby' in el.dataset)) el.dataset.describedby = el.getAttribute('aria-describedby') || '';
    el.setAttribute('aria-describedby', ((el.getAttribute('aria-describedby') || '') + ' ' + msg.id).trim());
    if (el.tagName === 'FIELDSET') { el.querySelector('legend').after(msg); continue; }
    const at = el.closest('label') || el;
    // In a grid the message stays in its field's cell.
    if (at.parentElement && at.parentElement.classList.contains('grid')) {
      const cell = document.createElement('div'); cell.className = 'cell';
      at.replaceWith(cell); cell.append(at);
    }
    at.after(msg);
  }
  box.focus();
  return true;
}

// TypesEditor edits an event's ticket types (each with an ID, a name, a
// price per seat category and an optional most per order), in order, or,
// with no types, the event's one price per category. The first type's
// prices are the event's prices.
export class TypesEditor {
  // el is emptied and filled; categories are the venue's; types
  // ({id,name,prices:{cat:{amount}},max_per_order,requires}) and prices
  // ({cat:{amount}}) the current ones; disabled shows them fixed.
  constructor(el, { categories, currency, types = [], prices = {}, disabled = false, questions = () => [] }) {
    Object.assign(this, { el, categories: [...categories].sort(), currency, disabled, questions });
    this.rows = types.map(t => ({ id: t.id, name: t.name, auto: false, max: t.max_per_order ? String(t.max_per_order) : '', requires: t.requires || '',
      prices: Object.fromEntries(Object.entries(t.prices || {}).map(([c, p]) => [c, major(p.amount, currency)])) }));
    this.prices = Object.fromEntries(Object.entries(prices).map(([c, p]) => [c, major(p.amount, currency)]));
    this.render();
  }

  setCategories(categories) { this.sync(); this.categories = [...categories].sort(); this.render(); }
  setCurrency(currency) { this.sync(); this.currency = currency; this.render(); }

  // sync reads what was typed into the rows.
  sync() {
    const val = name => { const i = this.el.querySelector(`[name="${CSS.escape(name)}"]`); return i ? i.value : undefined; };
    this.rows.forEach((r, i) => {
      const at = `ticket_types[${i}]`;
      r.id = val(at + '.id') ?? r.id;
      r.name = val(at + '.name') ?? r.name;
      r.max = val(at + '.max_per_order') ?? r.max;
      r.requires = val(at + '.requires') ?? r.requires;
      for (const c of this.categories) { const v = val(`${at}.prices.${c}`); if (v !== undefined) r.prices[c] = v; }
    });
    for (const c of this.categories) { const v = val('prices.' + c); if (v !== undefined) this.prices[c] = v; }
  }

  render() {
    const cur = this.currency, step = 1 / 10 ** digits(cur), dis = this.disabled ? 'disabled' : '';
    const n = this.rows.length, qs = this.questions().filter(q => q.id);
    const requiresColumn = qs.length > 0 || this.rows.some(r => r.requires);
    const row = (r, i) => {
      const at = `ticket_types[${i}]`, k = i + 1;
      return `<tr data-type="${esc(r.id)}" data-row="${i}">
        <th scope="row">${k}${i === 0 ? ` <span class="muted">(${t('default')})</span>` : ''}</th>
        <td><input name="${at}.id" value="${esc(r.id)}" aria-label="${t('Type {k}: ID (what holds name it by)', { k })}" maxlength="40" autocomplete="off" size="8" ${dis}></td>
        <td><input name="${at}.name" value="${esc(r.name)}" aria-label="${t('Type {k}: name', { k })}" maxlength="100" autocomplete="off" size="10" ${dis}></td>
        ${this.categories.map(c => `<td><input type="number" name="${at}.prices.${esc(c)}" data-category="${esc(c)}" value="${esc(r.prices[c] ?? '')}"
          aria-label="${t('Type {k}: price for {c} ({cur})', { k, c: esc(c), cur: esc(cur) })}${i ? ', ' + t('empty if not sold there') : ''}" min="0" step="${step}" inputmode="decimal" ${dis}></td>`).join('')}
        <td><input type="number" name="${at}.max_per_order" value="${esc(r.max)}" aria-label="${t("Type {k}: most per order (empty: the event's limit)", { k })}" min="1" max="100" size="4" ${dis}></td>
        ${requiresColumn ? `<td><select name="${at}.requires" aria-label="${t('Type {k}: a question its buyers must answer', { k })}" ${dis}><option value="">${t('None')}</option>
          ${[...qs, ...(r.requires && !qs.some(q => q.id === r.requires) ? [{ id: r.requires, label: r.requires }] : [])].map(q =>
            `<option value="${esc(q.id)}" ${q.id === r.requires ? 'selected' : ''}>${esc(q.label || q.id)}</option>`).join('')}</select></td>` : ''}
        <td class="rowtools">${this.disabled ? '' : `<button type="button" class="secondary" data-move="up" data-row="${i}" aria-label="${t('Move type {k} up', { k })}" ${i === 0 ? 'disabled' : ''}>↑</button>
          <button type="button" class="secondary" data-move="down" data-row="${i}" aria-label="${t('Move type {k} down', { k })}" ${i === n - 1 ? 'disabled' : ''}>↓</button>
          <button type="button" class="secondary" data-remove="${i}" aria-label="${t('Remove type {k}', { k })}">${t('Remove')}</button>`}</td></tr>`;
    };
    this.el.innerHTML = `<fieldset name="ticket_types" class="types"><legend>${t('Ticket types')}</legend>
        <p class="note">${t("Sell the same seat as Adult, Child, Student… each at its own price per seat category. The first type is what a fan gets without choosing, and its prices are the event's prices. A later type with no price for a category is not sold there.")}</p>
        ${n ? `<div class="scroll" tabindex="0" role="region" aria-label="${t('Ticket types')}"><table class="list" id="types">
          <caption>${t('Ticket types in the order fans see them')}</caption>
          <thead><tr><th scope="col">${t('Order')}</th><th scope="col">${t('ID')}</th><th scope="col">${t('Name')}</th>
            ${this.categories.map(c => `<th scope="col">${esc(c)} (${esc(cur)})</th>`).join('')}<th scope="col">${t('Most per order')}</th>
            ${requiresColumn ? `<th scope="col">${t('Must answer')}</th>` : ''}
            <th scope="col"><span class="sr-only">${t('Move or remove')}</span></th></tr></thead>
          <tbody>${this.rows.map(row).join('')}</tbody></table></div>`
    : `<p id="notypes">${t('No ticket types: every ticket is sold at the price per category below.')}</p>`}
        ${this.disabled ? '' : `<button type="button" class="secondary" id="addtype">${t('Add a ticket type')}</button>`}
      </fieldset>
      <fieldset name="prices" id="eventprices" ${n ? 'hidden' : ''}><legend>${t('Price per category')}</legend>
        ${this.categories.map(c => `<label>${esc(c)} (${esc(cur)})
          <input type="number" name="prices.${esc(c)}" data-category="${esc(c)}" value="${esc(this.prices[c] ?? '')}" min="0" step="${step}" inputmode="decimal" ${dis}></label>`).join('')}
      </fieldset>`;
    if (this.disabled) return;
    const tbody = this.el.querySelector('#types tbody');
    this.el.querySelector('#addtype').onclick = () => {
      this.sync();
      // The first type starts from the event's prices.
      const first = !this.rows.length;
      this.rows.push({ id: '', name: '', auto: true, max: '', requires: '', prices: first ? { ...this.prices } : {} });
      this.render();
      const k = this.rows.length;
      this.el.querySelector(`[name="ticket_types[${k - 1}].name"]`).focus();
      announce(t('Type {k} added', { k }));
    };
    if (!tbody) return;
    tbody.addEventListener('input', e => {
      const m = e.target.name && e.target.name.match(/^ticket_types\[(\d+)\]\.(id|name)$/);
      if (!m) return;
      const r = this.rows[+m[1]];
      if (m[2] === 'id') { r.auto = false; return; }
      if (r.auto) this.el.querySelector(`[name="ticket_types[${m[1]}].id"]`).value = slug(e.target.value);
    });
    tbody.addEventListener('click', e => {
      const b = e.target.closest('button'); if (!b) return;
      this.sync();
      if (b.dataset.remove !== undefined) {
        const i = +b.dataset.remove, [gone] = this.rows.splice(i, 1);
        this.render();
        const next = this.el.querySelector(`[data-remove="${Math.min(i, this.rows.length - 1)}"]`) || this.el.querySelector('#addtype');
        next.focus();
        announce(t('Type {k} removed', { k: gone.name || i + 1 }));
        return;
      }
      const i = +b.dataset.row, j = b.dataset.move === 'up' ? i - 1 : i + 1;
      if (j < 0 || j >= this.rows.length) return;
      [this.rows[i], this.rows[j]] = [this.rows[j], this.rows[i]];
      this.render();
      // The focus stays on the moved row: the same arrow, or the other at an end.
      const same = this.el.querySelector(`[data-move="${b.dataset.move}"][data-row="${j}"]`);
      const other = this.el.querySelector(`[data-move="${b.dataset.move === 'up' ? 'down' : 'up'}"][data-row="${j}"]`);
      (same && !same.disabled ? same : other && !other.disabled ? other : this.el.querySelector(`[data-remove="${j}"]`)).focus();
      announce(t('{name} is now type {k}', { name: this.rows[j].name || t('The type'), k: j + 1 }) + (j === 0 ? ', ' + t('the default') : ''));
    });
  }

  // body is the request's part: ticket_types (and no prices) with types,
  // else prices and an empty list of types.
  body() {
    this.sync();
    const cur = this.currency;
    const priced = obj => Object.fromEntries(this.categories.filter(c => String(obj[c] ?? '').trim() !== '')
      .map(c => [c, { amount: minor(obj[c], cur), currency: cur }]));
    if (!this.rows.length) return { prices: priced(this.prices), ticket_types: [] };
    return {
      ticket_types: this.rows.map(r => ({ id: r.id.trim(), name: r.name.trim(), prices: priced(r.prices),
        ...(r.max.trim() ? { max_per_order: Number(r.max) } : {}), ...(r.requires ? { requires: r.requires } : {}) })),
    };
  }
}

// KINDS are what a question asks for, in words.
const KINDS = [['text', 'Text'], ['email', 'Email address'], ['choice', 'One of a list'], ['bool', 'Yes or no']];

// QuestionsEditor edits the questions fans answer at checkout (the
// attendee's name, a dietary need...): per ticket or once per order,
// required or not, in order. Questions stay editable after publishing.
export class QuestionsEditor {
  constructor(el, { questions = [], onChange = () => {} }) {
    Object.assign(this, { el, onChange });
    this.rows = questions.map(q => ({ id: q.id, label: q.label, kind: q.kind, choices: (q.choices || []).join(', '),
      required: !!q.required, per: q.per || 'ticket', auto: false }));
    this.render();
  }

  sync() {
    const el = name => this.el.querySelector(`[name="${CSS.escape(name)}"]`);
    this.rows.forEach((r, i) => {
      const at = `questions[${i}]`;
      if (!el(at + '.id')) return;
      r.id = el(at + '.id').value; r.label = el(at + '.label').value; r.kind = el(at + '.kind').value;
      r.choices = el(at + '.choices').value; r.required = el(at + '.required').checked; r.per = el(at + '.per').value;
    });
  }

  // list is the questions as typed ({id, label}), for the types' "must answer".
  list() { this.sync(); return this.rows.map(r => ({ id: r.id.trim(), label: r.label.trim() })); }

  render() {
    const n = this.rows.length;
    const row = (r, i) => {
      const at = `questions[${i}]`, k = i + 1;
      return `<li data-question="${esc(r.id)}" data-row="${i}"><fieldset name="${at}"><legend>${t('Question {k}', { k })}</legend><div class="grid">
        <label>${t('Question (what fans read)')} <input name="${at}.label" value="${esc(r.label)}" maxlength="200" autocomplete="off"></label>
        <label>${t('ID (in the attendee list)')} <input name="${at}.id" value="${esc(r.id)}" maxlength="40" autocomplete="off"></label>
        <label>${t('Answer')} <select name="${at}.kind">${KINDS.map(([v, l]) => `<option value="${v}" ${v === r.kind ? 'selected' : ''}>${t(l)}</option>`).join('')}</select></label>
        <label>${t('Asked')} <select name="${at}.per"><option value="ticket" ${r.per !== 'order' ? 'selected' : ''}>${t('For every ticket')}</option>
          <option value="order" ${r.per === 'order' ? 'selected' : ''}>${t('Once per order')}</option></select></label>
        <label ${r.kind === 'choice' ? '' : 'hidden'}>${t('Choices, separated by commas')} <input name="${at}.choices" value="${esc(r.choices)}" autocomplete="off"></label>
        <label class="check"><span><input type="checkbox" name="${at}.required" ${r.required ? 'checked' : ''}> ${t('Required')}</span></label>
        </div><div class="row">
        <button type="button" class="secondary" data-move="up" data-row="${i}" aria-label="${t('Move question {k} up', { k })}" ${i === 0 ? 'disabled' : ''}>↑</button>
        <button type="button" class="secondary" data-move="down" data-row="${i}" aria-label="${t('Move question {k} down', { k })}" ${i === n - 1 ? 'disabled' : ''}>↓</button>
        <button type="button" class="secondary" data-remove="${i}" aria-label="${t('Remove question {k}', { k })}">${t('Remove')}</button></div></fieldset></li>`;
    };
    this.el.innerHTML = `<fieldset name="questions" class="qeditor"><legend>${t('Questions at checkout')}</legend>
      <p class="note">${t("Asked before a fan pays: for every ticket (the attendee's name, shown on the ticket and at the door) or once per order. You can change them after publishing; bookings already paid keep their answers.")}</p>
      ${n ? `<ol class="qlist">${this.rows.map(row).join('')}</ol>` : `<p id="noquestions">${t('No questions: fans are asked nothing.')}</p>`}
      <button type="button" class="secondary" id="addquestion">${t('Add a question')}</button></fieldset>`;
    this.el.querySelector('#addquestion').onclick = () => {
      this.sync();
      this.rows.push({ id: '', label: '', kind: 'text', choices: '', required: false, per: 'ticket', auto: true });
      this.render(); this.onChange();
      this.el.querySelector(`[name="questions[${this.rows.length - 1}].label"]`).focus();
      announce(t('Question {k} added', { k: this.rows.length }));
    };
    const list = this.el.querySelector('ol'); if (!list) return;
    list.addEventListener('input', e => {
      const m = e.target.name && e.target.name.match(/^questions\[(\d+)\]\.(id|label)$/);
      if (!m) return;
      const r = this.rows[+m[1]];
      if (m[2] === 'id') r.auto = false;
      else if (r.auto) this.el.querySelector(`[name="questions[${m[1]}].id"]`).value = slug(e.target.value);
      this.onChange();
    });
    list.addEventListener('change', e => {
      const m = e.target.name && e.target.name.match(/^questions\[(\d+)\]\.kind$/);
      if (m) e.target.closest('fieldset').querySelector(`[name="questions[${m[1]}].choices"]`).closest('label').hidden = e.target.value !== 'choice';
    });
    list.addEventListener('click', e => {
      const b = e.target.closest('button'); if (!b) return;
      this.sync();
      if (b.dataset.remove !== undefined) {
        const i = +b.dataset.remove; this.rows.splice(i, 1);
        this.render(); this.onChange();
        (this.el.querySelector(`[data-remove="${Math.min(i, this.rows.length - 1)}"]`) || this.el.querySelector('#addquestion')).focus();
        announce(t('Question {k} removed', { k: i + 1 }));
        return;
      }
      const i = +b.dataset.row, j = b.dataset.move === 'up' ? i - 1 : i + 1;
      if (j < 0 || j >= this.rows.length) return;
      [this.rows[i], this.rows[j]] = [this.rows[j], this.rows[i]];
      this.render(); this.onChange();
      // The focus stays on the moved row: the same arrow, or the other at an end.
      const same = this.el.querySelector(`[data-move="${b.dataset.move}"][data-row="${j}"]`);
      const other = this.el.querySelector(`[data-move="${b.dataset.move === 'up' ? 'down' : 'up'}"][data-row="${j}"]`);
      (same && !same.disabled ? same : other && !other.disabled ? other : this.el.querySelector(`[data-remove="${j}"]`)).focus();
      announce(t('Question moved to place {k}', { k: j + 1 }));
    });
  }

  body() {
    this.sync();
    return this.rows.map(r => ({ id: r.id.trim(), label: r.label.trim(), kind: r.kind, required: r.required, per: r.per,
      ...(r.kind === 'choice' ? { choices: r.choices.split(',').map(c => c.trim()).filter(Boolean) } : {}) }));
  }
}

// typesText lists an event's types with their prices, for its overview.
export function typesText(ev) {
  if (!(ev.ticket_types || []).length) return t('One type at the prices above');
  return `<ul class="plain" id="typelist">${ev.ticket_types.map(t => `<li data-type="${esc(t.id)}"><strong>${esc(t.name)}</strong>
    (<code>${esc(t.id)}</code>): ${Object.entries(t.prices).sort().map(([c, p]) => esc(c) + ' ' + money(p.amount, p.currency)).join(', ')}${t.max_per_order ? '; ' + translate('at most {n} per order', { n: t.max_per_order }) : ''}</li>`).join('')}</ul>`;
}

// editPage is an event's edit form: a draft's every field, a published
// event's always-editable ones (the rest shown, fixed).
export async function editPage(page, ev) {
  if (ev.status === 'CANCELLED') { page.innerHTML = `<p>${t('The event is cancelled: nothing about it changes any more.')}</p>`; return; }
  const draft = ev.status === 'DRAFT', tz = ev.timezone || 'UTC';
  const fixed = name => draft || ALWAYS_EDITABLE.includes(name) ? '' : 'disabled';
  const v = (name, val) => `name="${name}" value="${esc(val ?? '')}" ${fixed(name)}`;
  const cur = ev.currency, step = 1 / 10 ** digits(cur);
  page.innerHTML = `<h2>${t('Edit the event')}</h2>
    <p class="note" id="editnote">${draft ? 'A draft may change anything. Fans see none of it until you publish.'
    : 'Published: fans have bought under these terms, so the venue, dates, on-sale time, currency, prices, ticket types, service fee, waiting room and cancellation deadline are fixed (shown greyed). The rest, questions included, may still change.'}</p>
    <form id="editform" class="stack" novalidate>
      <div id="edit-errors" class="errors" tabindex="-1" hidden></div>
      <label>${t('Title')} <input ${v('title', ev.title)} required maxlength="200"></label>
      <label>${t('Artist')} <input ${v('artist', ev.artist)} maxlength="200"></label>
      <label>${t('Genre')} <input ${v('genre', ev.genre)} maxlength="200"></label>
      <label>${t('Description')} <textarea name="description" rows="3" maxlength="5000" ${fixed('description')}>${esc(ev.description)}</textarea></label>
      <p class="note">${t("Times are on the venue's clocks:")} <strong>${esc(tz)}</strong>.</p>
      <div class="grid">
        <label>${t('Starts')} <input type="datetime-local" ${v('starts_at', localInput(ev.starts_at, tz))} required></label>
        <label>${t('On sale from')} <input type="datetime-local" ${v('onsale_at', localInput(ev.onsale_at, tz))} required></label>
        <label>${t('Off sale at')} <input type="datetime-local" ${v('offsale_at', ev.offsale_at ? localInput(ev.offsale_at, tz) : '')}></label>
        <label>${t('Cancellation deadline')} <input type="datetime-local" ${v('cancellation_deadline', ev.cancellation_deadline ? localInput(ev.cancellation_deadline, tz) : '')}></label>
      </div>
      <div class="grid">
        <label>${t('Currency')} <input ${v('currency', cur)} required pattern="[A-Z]{3}" maxlength="3" autocomplete="off"></label>
        <label>${t('Tickets per customer')} <input type="number" ${v('per_customer_limit', ev.per_customer_limit)} min="1" max="100" required></label>
        <label>${t('Hold time (seconds)')} <input type="number" ${v('hold_ttl_seconds', ev.hold_ttl_seconds)} min="30" max="3600" required></label>
        <label class="check"><span><input type="checkbox" name="metered" ${ev.metered ? 'checked' : ''} ${fixed('metered')}> ${t('Waiting room (metered sale)')}</span></label>
      </div>
      <div id="typesbox"></div>
      <div id="questionsbox"></div>
      <label><span>${t('Service fee per ticket')} (<span class="cur">${esc(cur)}</span>; ${t('shown to fans apart from the price, 0 for none')})</span>
        <input type="number" ${v('service_fee', major(ev.service_fee ? ev.service_fee.amount : 0, cur))} min="0" step="${step}" inputmode="decimal"></label>
      <fieldset name="resale"><legend>${t('Resale between fans')}</legend>
        <label class="check"><span><input type="checkbox" name="resale.enabled" ${ev.resale.enabled ? 'checked' : ''}> ${t('Allow resale')}</span></label>
        <div class="grid">
          <label>${t('Price cap, % of face value')} <input name="resale.max_price_percent" type="number" min="0" max="1000" step="0.01" value="${ev.resale.max_price_percent}"></label>
          <label>${t('Fee, % of the resale price')} <input name="resale.fee_percent" type="number" min="0" max="50" step="0.01" value="${ev.resale.fee_percent}"></label>
          <label>${t('Listings close, minutes before the show')} <input name="resale.closes_minutes_before_start" type="number" min="0" step="1" value="${ev.resale.closes_minutes_before_start}"></label>
        </div>
      </fieldset>
      <label class="check"><span><input type="checkbox" name="reentry" ${ev.reentry ? 'checked' : ''}> ${t('Re-entry: a ticket scanned out at the door may come back in')}</span></label>
      <div class="row"><button id="saveevent">${t('Save the changes')}</button></div>
      <p id="saved" class="done" role="status" hidden></p>
    </form>`;
  const f = page.querySelector('#editform');
  let types = null;
  const questions = new QuestionsEditor(page.querySelector('#questionsbox'), { questions: ev.questions || [],
    onChange: () => { if (types && draft) { types.sync(); types.render(); } } });
  types = new TypesEditor(page.querySelector('#typesbox'), { categories: Object.keys(ev.prices), currency: cur,
    types: ev.ticket_types || [], prices: ev.prices, disabled: !draft, questions: () => questions.list() });
  if (draft) f.currency.onchange = () => {
    const c = f.currency.value.trim().toUpperCase();
    if (!/^[A-Z]{3}$/.test(c)) return;
    types.setCurrency(c);
    for (const s of f.querySelectorAll('.cur')) s.textContent = c;
    f.service_fee.step = String(1 / 10 ** digits(c));
  };
  f.onsubmit = async e => {
    e.preventDefault();
    const btn = page.querySelector('#saveevent'); btn.disabled = true;
    page.querySelector('#saved').hidden = true;
    const el = n => f.elements[n];
    const num = n => el(n).value === '' ? undefined : Number(el(n).value);
    const time = n => isoOf(el(n).value, tz);
    const body = { title: el('title').value.trim(), artist: el('artist').value.trim(), genre: el('genre').value.trim(),
      description: el('description').value.trim(), per_customer_limit: num('per_customer_limit'), hold_ttl_seconds: num('hold_ttl_seconds'),
      offsale_at: time('offsale_at'), reentry: el('reentry').checked, questions: questions.body(),
      resale: { enabled: el('resale.enabled').checked, max_price_percent: num('resale.max_price_percent'),
        fee_percent: num('resale.fee_percent'), closes_minutes_before_start: num('resale.closes_minutes_before_start') } };
    if (draft) {
      const c = el('currency').value.trim().toUpperCase();
      Object.assign(body, { starts_at: time('starts_at'), onsale_at: time('onsale_at'), cancellation_deadline: time('cancellation_deadline'),
        currency: c, metered: el('metered').checked,
        service_fee: { amount: el('service_fee').value === '' ? 0 : minor(el('service_fee').value, c), currency: c }, ...types.body() });
    }
    try {
      const out = await request('PATCH', '/v1/admin/events/' + encodeURIComponent(ev.event_id), body);
      clearProblem();
      const h1 = main.querySelector('h1');
      if (h1) h1.innerHTML = `${esc(out.title)} ${badge(out.status)}`;
      await editPage(page, out);
      const done = page.querySelector('#saved');
      done.textContent = t('Saved at {time}.', { time: new Date().toLocaleTimeString(locale()) });
      done.hidden = false;
      announce(t('The event is saved'));
    } catch (err) {
      btn.disabled = false;
      if (fieldProblems(f, page.querySelector('#edit-errors'), err)) announce(t('Not saved:') + ' ' + explain(err));
      else showProblem(err);
    }
  };
}

// orgView is the organisation's legal and tax settings, printed on its
// invoices: the VAT rate typed in percent, kept in basis points.
export async function orgView() {
  const here = current();
  const o = await get('/v1/admin/org');
  if (!here()) return;
  main.innerHTML = `<h1>${t('Organisation')}</h1>
    <p>${t('What your invoices say about the seller: fans get an invoice with every paid booking and a credit note with every refund. A change of VAT applies to holds taken from then on; issued invoices keep what they said.')}</p>
    <form id="orgform" class="stack" novalidate aria-label="${t('Organisation settings')}">
      <div id="org-errors" class="errors" tabindex="-1" hidden></div>
      <p>${t('Organisation')}: <code id="orgid">${esc(o.org_id)}</code></p>
      <label>${t('Legal name')} <input name="legal_name" value="${esc(o.legal_name)}" maxlength="200" autocomplete="organization"></label>
      <label>${t('Address')} <textarea name="address" rows="3" maxlength="500" autocomplete="street-address">${esc(o.address)}</textarea></label>
      <label>${t('VAT ID')} <input name="vat_id" value="${esc(o.vat_id)}" maxlength="40" autocomplete="off"></label>
      <label>${t('VAT rate (%)')} <input name="tax_rate_bp" type="number" min="0" max="100" step="0.01" inputmode="decimal" value="${o.tax_rate_bp / 100}"></label>
      <label class="check"><span><input type="checkbox" name="prices_include_tax" ${o.prices_include_tax ? 'checked' : ''}> ${t('Prices include VAT (otherwise VAT is added at checkout)')}</span></label>
      <label>${t('Invoice number prefix (capital letters and digits, such as INV)')} <input name="invoice_prefix" value="${esc(o.invoice_prefix)}" maxlength="12" autocomplete="off"></label>
      <button id="saveorg">${t('Save')}</button>
      <p id="orgsaved" class="done" role="status" hidden></p>
    </form>`;
  const f = main.querySelector('#orgform');
  f.onsubmit = async e => {
    e.preventDefault();
    const btn = main.querySelector('#saveorg'); btn.disabled = true;
    main.querySelector('#orgsaved').hidden = true;
    const rate = f.tax_rate_bp.value.trim();
    const body = { legal_name: f.legal_name.value.trim(), address: f.address.value.trim(), vat_id: f.vat_id.value.trim(),
      prices_include_tax: f.prices_include_tax.checked, invoice_prefix: f.invoice_prefix.value.trim(),
      tax_rate_bp: rate === '' ? 0 : Math.round(Number(rate) * 100) };
    try {
      const out = await request('PATCH', '/v1/admin/org', body);
      clearProblem(); fieldProblems(f, main.querySelector('#org-errors'), null);
      f.tax_rate_bp.value = out.tax_rate_bp / 100;
      const done = main.querySelector('#orgsaved');
      done.textContent = `Saved: VAT ${out.tax_rate_bp / 100}% ${out.prices_include_tax ? 'included in' : 'added to'} prices, invoices numbered ${out.invoice_prefix}-….`;
      done.hidden = false;
      announce(t('Organisation saved'));
    } catch (err) {
      if (fieldProblems(f, main.querySelector('#org-errors'), err)) announce(t('Not saved:') + ' ' + explain(err));
      else showProblem(err);
    } finally { btn.disabled = false; }
  };
}

// seriesView is the new series form: the fields every date shares and a
// list of dates, one event each.
export async function seriesView() {
  const here = current();
  const { venues } = await get('/v1/admin/venues');
  if (!here()) return;
  if (!venues.length) {
    main.innerHTML = `<h1>${t('New series')}</h1><p>${t('A series is sold on one of your venues.')} <a href="#/venues">${t('Upload a venue layout')}</a> ${t('first.')}</p>`;
    return;
  }
  const venueOf = id => venues.find(x => x.venue_id === id) || venues[0];
  main.innerHTML = `<h1>${t('New series')}</h1>
    <p>${t('One show on many dates: each date becomes an event of its own, sharing the venue, prices, ticket types and settings.')}</p>
    <form id="seriesform" class="stack" novalidate>
      <div id="series-errors" class="errors" tabindex="-1" hidden></div>
      <label>${t('Venue')} <select name="venue_id">${venues.map(v => `<option value="${esc(v.venue_id)}">${esc(v.name)}, ${esc(v.city)} (${t('{n} seats', { n: v.seats })})</option>`).join('')}</select></label>
      <label>${t('Title')} <input name="title" required maxlength="200"></label>
      <label>${t('Artist')} <input name="artist" maxlength="200"></label>
      <label>${t('Genre')} <input name="genre" maxlength="200"></label>
      <label>${t('Description')} <textarea name="description" rows="3" maxlength="5000"></textarea></label>
      <div class="grid">
        <label>${t('Currency')} <input name="currency" required pattern="[A-Z]{3}" value="EUR" maxlength="3" autocomplete="off"></label>
        <label>${t('Tickets per customer')} <input type="number" name="per_customer_limit" min="1" max="100" value="6"></label>
        <label>${t('Hold time (seconds)')} <input type="number" name="hold_ttl_seconds" min="30" max="3600" value="600"></label>
      </div>
      <div id="typesbox"></div>
      <label><span>${t('Service fee per ticket')} (<span class="cur">EUR</span>)</span> <input type="number" name="service_fee" min="0" step="0.01" value="0" inputmode="decimal"></label>
      <fieldset name="dates"><legend>${t('Dates')}</legend>
        <p class="note" id="datezone"></p>
        <ol id="dates" class="dates"></ol>
        <button type="button" class="secondary" id="adddate">${t('Add a date')}</button>
      </fieldset>
      <label class="check"><span><input type="checkbox" name="publish" checked> ${t('Publish every date at once (otherwise each is a draft)')}</span></label>
      <button id="createseries">${t('Create the series')}</button>
    </form>
    <section id="created" aria-labelledby="createdhead" hidden><h2 id="createdhead" tabindex="-1">${t('Series created')}</h2><ul id="serieslist"></ul></section>`;
  const f = main.querySelector('#seriesform'), list = main.querySelector('#dates');
  const zone = () => venueOf(f.venue_id.value).timezone || 'UTC';
  const types = new TypesEditor(main.querySelector('#typesbox'), { categories: venueOf(f.venue_id.value).categories, currency: 'EUR' });
  const dates = [];
  const sync = () => list.querySelectorAll('li').forEach((li, i) => {
    dates[i] = { starts_at: li.querySelector('[data-field=starts_at]').value, onsale_at: li.querySelector('[data-field=onsale_at]').value };
  });
  const render = () => {
    main.querySelector('#datezone').innerHTML = `${t("Times are on the venue's clocks:")} <strong>${esc(zone())}</strong>.`;
    list.innerHTML = dates.map((d, i) => `<li data-date="${i}"><div class="grid">
      <label>${t('Date {n} starts', { n: i + 1 })} <input type="datetime-local" name="dates[${i}].starts_at" data-field="starts_at" value="${esc(d.starts_at)}"></label>
      <label>${t('Date {n} on sale from', { n: i + 1 })} <input type="datetime-local" name="dates[${i}].onsale_at" data-field="onsale_at" value="${esc(d.onsale_at)}"></label>
      <div class="row"><button type="button" class="secondary" data-remove="${i}" aria-label="Remove date ${i + 1}" ${dates.length === 1 ? 'disabled' : ''}>${t('Remove')}</button></div>
      </div></li>`).join('');
  };
  const add = () => {
    sync();
    const last = dates[dates.length - 1];
    const z = zone();
    // The next date a day after the last, 20:00 a month away for the first;
    // sales open now.
    const start = last && last.starts_at ? localInput(new Date(isoOf(last.starts_at, z)).getTime() + 864e5, z)
      : localInput(Date.now() + 30 * 864e5, z).slice(0, 10) + 'T20:00';
    dates.push({ starts_at: start, onsale_at: last ? last.onsale_at : localInput(Date.now() - 60000, z) });
    render();
  };
  add();
  main.querySelector('#adddate').onclick = () => { add(); list.querySelector('li:last-child input').focus(); announce(t('Date {n} added', { n: dates.length })); };
  list.addEventListener('click', e => {
    const b = e.target.closest('button[data-remove]'); if (!b) return;
    sync(); dates.splice(+b.dataset.remove, 1); render();
    main.querySelector('#adddate').focus(); announce(t('Date removed'));
  });
  f.venue_id.onchange = () => { sync(); types.setCategories(venueOf(f.venue_id.value).categories); render(); };
  f.currency.onchange = () => {
    const c = f.currency.value.trim().toUpperCase();
    if (!/^[A-Z]{3}$/.test(c)) return;
    types.setCurrency(c);
    for (const s of f.querySelectorAll('.cur')) s.textContent = c;
    f.service_fee.step = String(1 / 10 ** digits(c));
  };
  f.onsubmit = async e => {
    e.preventDefault();
    sync();
    const btn = main.querySelector('#createseries'); btn.disabled = true;
    const z = zone(), c = f.currency.value.trim().toUpperCase();
    const num = n => f.elements[n].value === '' ? undefined : Number(f.elements[n].value);
    const body = { venue_id: f.venue_id.value, title: f.title.value.trim(), artist: f.artist.value.trim(), genre: f.genre.value.trim(),
      description: f.description.value.trim(), currency: c, per_customer_limit: num('per_customer_limit'), hold_ttl_seconds: num('hold_ttl_seconds'),
      service_fee: { amount: f.service_fee.value === '' ? 0 : minor(f.service_fee.value, c), currency: c },
      dates: dates.map(d => ({ starts_at: isoOf(d.starts_at, z), onsale_at: isoOf(d.onsale_at, z) })),
      publish: f.publish.checked, ...types.body() };
    if (!body.ticket_types.length) delete body.ticket_types;
    try {
      const out = await post('/v1/admin/series', body);
      clearProblem(); fieldProblems(f, main.querySelector('#series-errors'), null);
      const box = main.querySelector('#created');
      main.querySelector('#serieslist').innerHTML = out.events.map(ev => `<li data-event="${esc(ev.event_id)}">
        <a href="#/event/${encodeURIComponent(ev.event_id)}">${esc(whenIn(ev.starts_at, ev.timezone))}</a> ${badge(ev.status)}</li>`).join('');
      box.dataset.series = out.series_id;
      box.hidden = false; f.hidden = true;
      box.querySelector('h2').focus();
      announce(t('Series created: {n} dates of {title}', { n: out.events.length, title: out.title }));
    } catch (err) {
      btn.disabled = false;
      if (fieldProblems(f, main.querySelector('#series-errors'), err)) announce(t('Not created:') + ' ' + explain(err));
      else showProblem(err);
    }
  };
}

// attendeesPage lists the event's valid tickets with the answers given for
// them (the attendee's name...), each place by its label, finds them by
// e-mail, ticket, booking or seat as the organiser types, and downloads
// them as CSV.
export async function attendeesPage(page, ev) {
  const path = '/v1/admin/events/' + encodeURIComponent(ev.event_id) + '/attendees';
  const a = await get(path);
  page.innerHTML = `<h2>${t('Attendees')}</h2>
    <p class="row"><span>${plural(a.attendees.length, '{n} valid ticket, with the answers given at checkout.', '{n} valid tickets, with the answers given at checkout.')}</span>
      <button class="secondary" id="attendeescsv">${t('Download as CSV')}</button></p>
    <form id="attendeesearch" class="row" role="search" aria-label="${t('Search the attendees')}">
      <label>${t('E-mail, ticket, booking or seat')} <input type="search" id="attendeeq" name="q" maxlength="200" autocomplete="off"></label></form>
    <p id="attendeecount" aria-live="polite"></p>
    <div class="scroll" tabindex="0" role="region" aria-label="${t('Attendees')}"><table class="list" id="attendees">
      <caption>${t('Tickets and their answers')}</caption>
      <thead><tr><th scope="col">${t('Ticket')}</th><th scope="col">${t('Place')}</th><th scope="col">${t('Buyer')}</th>
        ${a.questions.map(q => `<th scope="col" data-question="${esc(q.id)}">${esc(q.label)}</th>`).join('')}</tr></thead>
      <tbody>${a.attendees.map(x => `<tr data-ticket="${esc(x.ticket_id)}" data-booking="${esc(x.booking_id)}"><th scope="row"><code title="${esc(x.ticket_id)}">${esc(x.ticket_id.slice(0, 8))}</code></th>
        <td data-field="place">${esc(x.label || x.seat_id || x.section_id)}</td><td data-field="email">${esc(x.email)}</td>
        ${a.questions.map(q => `<td data-question="${esc(q.id)}">${esc((x.answers || {})[q.id] || '')}</td>`).join('')}</tr>`).join('')}
        <tr id="noattendees" hidden><td colspan="${3 + a.questions.length}"></td></tr></tbody></table></div>`;
  labelCells(page.querySelector('#attendees'));
  const q = page.querySelector('#attendeeq'), none = page.querySelector('#noattendees'), count = page.querySelector('#attendeecount');
  // What a row is found by: its e-mail, ticket and booking IDs, place and
  // answers, in lower case.
  const text = new Map(a.attendees.map(x => [x.ticket_id, [x.email, x.ticket_id, x.booking_id, x.label, x.seat_id,
    ...Object.values(x.answers || {})].join('\n').toLowerCase()]));
  const filter = () => {
    const needle = q.value.trim().toLowerCase();
    let shown = 0;
    for (const tr of page.querySelectorAll('#attendees tbody tr[data-ticket]')) {
      tr.hidden = !!needle && !text.get(tr.dataset.ticket).includes(needle);
      if (!tr.hidden) shown++;
    }
    none.hidden = shown > 0;
    none.firstElementChild.textContent = a.attendees.length ? t('No attendee matches this search.') : t('No tickets sold yet.');
    count.textContent = needle ? plural(shown, '{n} of them matches.', '{n} of them match.') : '';
  };
  q.addEventListener('input', filter);
  // Enter filters too, and never sends the form (the router owns the address).
  page.querySelector('#attendeesearch').onsubmit = e => { e.preventDefault(); filter(); };
  filter();
  page.querySelector('#attendeescsv').onclick = () => download(path + '?format=csv', `attendees-${ev.event_id}.csv`).catch(showProblem);
}
