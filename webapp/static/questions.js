// The event's questions on the hold page, answered before paying: each
// per-ticket question once for every ticket of the hold (its lines in
// order, each expanded by its quantity: ticket_index), each per-order
// question once. The checkout sends the answers; a refused answer (422
// naming answers.<question>[<ticket>]) is shown beside its field.
import { ProblemError } from './api.js';
import { esc } from './orders.js';
import { t } from './i18n.js';

let seq = 0;

// tickets are the hold's tickets in the order answers index them: each
// with its label (from the booking's lines) and type.
function tickets(h, b) {
  const out = [];
  for (const it of h.items || []) {
    const line = ((b && b.items) || []).find(x => (it.seat_id ? x.seat_id === it.seat_id : !x.seat_id && x.section_id === it.section_id)) || {};
    const label = line.label || it.seat_id || it.section_id;
    for (let u = 1; u <= it.quantity; u++) out.push({ label: it.quantity > 1 ? `${label} (${u} of ${it.quantity})` : label, type: it.ticket_type });
  }
  return out;
}

// field is one question's input for a ticket (or the order, ticket 0).
function field(q, i, required) {
  const name = `answers.${q.id}[${i}]`, id = 'q' + (++seq);
  const req = required ? ` <span class="req">(${t('required')})</span>` : ` <span class="muted">(${t('optional')})</span>`;
  const attrs = `name="${esc(name)}" id="${id}" data-question="${esc(q.id)}" data-ticket="${i}" data-kind="${esc(q.kind)}" ${required ? 'aria-required="true"' : ''}`;
  switch (q.kind) {
    case 'bool':
      return `<label class="check"><span><input type="checkbox" ${attrs}> ${esc(q.label)}</span></label>`;
    case 'choice':
      return `<label for="${id}">${esc(q.label)}${req}</label><select ${attrs}><option value="">${t('Choose…')}</option>
        ${(q.choices || []).map(c => `<option value="${esc(c)}">${esc(c)}</option>`).join('')}</select>`;
    case 'email':
      return `<label for="${id}">${esc(q.label)}${req}</label><input type="email" autocomplete="email" maxlength="500" ${attrs}>`;
    default:
      return `<label for="${id}">${esc(q.label)}${req}</label><input type="text" maxlength="500" ${/name/i.test(q.id + ' ' + q.label) ? 'autocomplete="name"' : 'autocomplete="off"'} ${attrs}>`;
  }
}

// Questions is the questions' form of a hold, or nothing when the event
// asks none (el stays empty).
export class Questions {
  constructor(el, ev, h, b) {
    this.el = el;
    const qs = (ev && ev.questions) || [];
    const perTicket = qs.filter(q => q.per !== 'order'), perOrder = qs.filter(q => q.per === 'order');
    if (!qs.length) return;
    const types = (ev && ev.ticket_types) || [];
    const typeName = id => (types.find(t => t.id === id) || {}).name || id;
    const requires = id => (types.find(t => t.id === id) || {}).requires;
    const list = tickets(h, b);
    el.innerHTML = `<form id="questions" class="questions" novalidate aria-labelledby="qhead">
      <h2 id="qhead">${t('About your tickets')}</h2>
      <p class="note">${t('The organiser asks these before you pay.')}</p>
      ${perTicket.length ? list.map((tk, i) => `<fieldset data-ticket="${i}"><legend>${t('Ticket {n}', { n: i + 1 })}: ${esc(tk.label)}${types.length > 1 && tk.type ? ' · ' + esc(typeName(tk.type)) : ''}</legend>
        ${perTicket.map(q => `<div class="qfield">${field(q, i, q.required || requires(tk.type) === q.id)}</div>`).join('')}</fieldset>`).join('') : ''}
      ${perOrder.length ? `<fieldset data-ticket="order"><legend>${t('Your order')}</legend>
        ${perOrder.map(q => `<div class="qfield">${field(q, 0, q.required)}</div>`).join('')}</fieldset>` : ''}
    </form>`;
    el.querySelector('form').onsubmit = e => e.preventDefault();
  }

  // answers are what the fan typed, for the checkout (unanswered left out).
  answers() {
    const out = [];
    for (const i of this.el.querySelectorAll('[data-question]')) {
      const value = i.type === 'checkbox' ? String(i.checked) : i.value.trim();
      if (value !== '') out.push({ question_id: i.dataset.question, ticket_index: Number(i.dataset.ticket), value });
    }
    return out;
  }

  // showErrors marks the answers a refused checkout names, each with its
  // message beside it, and focuses the first; it answers whether any
  // was an answer's (null clears them).
  showErrors(err) {
    for (const m of this.el.querySelectorAll('.field-error')) m.remove();
    for (const i of this.el.querySelectorAll('[aria-invalid]')) { i.removeAttribute('aria-invalid'); i.removeAttribute('aria-describedby'); }
    const list = (err instanceof ProblemError && err.problem.errors || []).filter(e => String(e.field).startsWith('answers'));
    let first = null;
    for (const e of list) {
      const input = this.el.querySelector(`[name="${CSS.escape(e.field)}"]`);
      if (!input) continue;
      const m = document.createElement('p');
      m.className = 'field-error'; m.id = 'qerr' + (++seq); m.dataset.field = e.field; m.textContent = e.message;
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', m.id);
      (input.closest('label.check') || input).after(m);
      first = first || input;
    }
    if (first) first.focus();
    return list.length > 0;
  }
}
