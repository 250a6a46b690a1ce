// The card form: the only place the card number exists. It validates as
// the fan types (Luhn, expiry, CVC), tells the parent whether the form is
// complete, and creates the payment method at the sandbox when asked.
'use strict';
const $ = id => document.getElementById(id);
const number = $('number'), expiry = $('expiry'), cvc = $('cvc'), brandEl = $('brand'), errorEl = $('error');
const digits = s => s.replace(/\D/g, '');

function brandOf(n) {
  if (/^4/.test(n)) return 'visa';
  if (/^(5[1-5]|22[2-9]|2[3-6]|27[01]|2720)/.test(n)) return 'mastercard';
  if (/^3[47]/.test(n)) return 'amex';
  if (/^(6011|65)/.test(n)) return 'discover';
  return 'unknown';
}

function luhn(n) {
  let sum = 0;
  for (let i = 0; i < n.length; i++) {
    let d = +n[n.length - 1 - i];
    if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return sum % 10 === 0;
}

function expiryParts() {
  const d = digits(expiry.value);
  return { month: +d.slice(0, 2), year: 2000 + +d.slice(2, 4), complete: d.length === 4 };
}

// problems lists each field's problem, in the form's order; final is true
// when the fan is done (a submit), so incomplete fields count too.
function problems(final) {
  const out = [];
  const n = digits(number.value), b = brandOf(n);
  if (n.length === 0 ? final : (n.length >= 13 && !luhn(n)) || n.length > 19 || (final && n.length < 13)) {
    out.push({ field: number, code: n.length < 13 ? 'incomplete_number' : 'invalid_number',
      message: n.length < 13 ? 'Your card number is incomplete.' : 'Your card number is invalid.' });
  }
  const e = expiryParts(), now = new Date();
  if (e.complete && (e.month < 1 || e.month > 12)) {
    out.push({ field: expiry, code: 'invalid_expiry_month', message: "Your card's expiration date is invalid." });
  } else if (e.complete && (e.year < now.getFullYear() || (e.year === now.getFullYear() && e.month < now.getMonth() + 1))) {
    out.push({ field: expiry, code: 'invalid_expiry_year_past', message: "Your card's expiration date is in the past." });
  } else if (final && !e.complete) {
    out.push({ field: expiry, code: 'incomplete_expiry', message: "Your card's expiration date is incomplete." });
  }
  const c = digits(cvc.value), want = b === 'amex' ? 4 : 3;
  if ((final && c.length < want) || c.length > want) {
    out.push({ field: cvc, code: 'incomplete_cvc', message: "Your card's security code is incomplete." });
  }
  return out;
}

function show(list) {
  for (const f of [number, expiry, cvc]) f.setAttribute('aria-invalid', String(list.some(p => p.field === f)));
  errorEl.textContent = list.length ? list[0].message : '';
}

function format() {
  const n = digits(number.value).slice(0, 19), b = brandOf(n);
  const groups = b === 'amex' ? [4, 6, 5] : [4, 4, 4, 4, 3];
  let out = '', i = 0;
  for (const g of groups) { if (i >= n.length) break; out += (out ? ' ' : '') + n.slice(i, i + g); i += g; }
  if (number.value !== out) number.value = out;
  brandEl.textContent = n ? (b === 'unknown' ? '' : b) : '';
  const e = digits(expiry.value).slice(0, 4);
  const ev = e.length > 2 ? e.slice(0, 2) + ' / ' + e.slice(2) : e;
  if (expiry.value !== ev && document.activeElement === expiry) expiry.value = ev;
  cvc.value = digits(cvc.value).slice(0, 4);
}

function change() {
  format();
  const empty = !digits(number.value) && !digits(expiry.value) && !digits(cvc.value);
  const complete = problems(true).length === 0;
  if (!errorEl.textContent || problems(false).length === 0) show(problems(false));
  emit('change', { complete, empty, collapsed: false, value: { type: 'card' } });
}

for (const f of [number, expiry, cvc]) {
  f.addEventListener('input', change);
  f.addEventListener('blur', () => { show(problems(false)); emit('blur'); });
  f.addEventListener('focus', () => emit('focus'));
}

// invalid answers a call made on an unfinished form, and shows why.
function invalid() {
  const list = problems(true);
  if (!list.length) return null;
  show(list);
  list[0].field.focus();
  return { error: { type: 'validation_error', code: list[0].code, message: list[0].message } };
}

$('card').addEventListener('submit', e => e.preventDefault());

serve({
  submit: () => invalid() || {},
  focus: () => { number.focus(); return {}; },
  update: () => ({}),
  createPaymentMethod: async d => {
    const bad = invalid();
    if (bad) return bad;
    const e = expiryParts();
    const form = { type: 'card', 'card[number]': digits(number.value), 'card[exp_month]': String(e.month),
      'card[exp_year]': String(e.year), 'card[cvc]': digits(cvc.value) };
    const billing = (d.params && d.params.billing_details) || {};
    for (const k of ['name', 'email', 'phone']) if (billing[k]) form['billing_details[' + k + ']'] = String(billing[k]);
    const r = await api('POST', '/v1/payment_methods', form);
    if (r.error) {
      if (r.error.type === 'card_error') { errorEl.textContent = r.error.message; number.setAttribute('aria-invalid', 'true'); }
      return { error: r.error };
    }
    return { paymentMethod: r.ok };
  },
});

new ResizeObserver(() => emit('resize', { height: Math.ceil(document.documentElement.getBoundingClientRect().height) + 4 }))
  .observe(document.documentElement);
