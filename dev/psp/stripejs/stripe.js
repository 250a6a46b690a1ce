// The payment sandbox's stand-in for the part of Stripe.js (v3) the Encore
// web app uses, so the same app code pays end to end without the internet:
// Stripe(publishableKey), stripe.elements({mode, amount, currency, ...}),
// elements.create('payment'), element.mount/on/off/focus/unmount/destroy,
// elements.update and elements.submit, stripe.createPaymentMethod({elements}),
// stripe.handleNextAction({clientSecret}) and stripe.retrievePaymentIntent.
//
// As with Stripe.js, card numbers never reach the merchant's page: the card
// form is an iframe on the sandbox's origin, which creates the payment method
// itself; this script, running in the merchant's page, only passes messages.
// A hidden controller iframe (also on the sandbox's origin) makes the other
// API calls, and 3-D Secure opens as a modal iframe over the page.
(function () {
  'use strict';
  if (window.Stripe) return;
  const script = document.currentScript;
  const ORIGIN = new URL(script.src).origin;
  const BASE = new URL('.', script.src).href;
  const TAG = '__encoreSandboxStripe';

  let seq = 0;
  const pending = new Map();
  const frames = new Map(); // contentWindow -> handler of its events

  window.addEventListener('message', e => {
    if (e.origin !== ORIGIN || !e.data || e.data[TAG] !== true) return;
    const d = e.data;
    if (d.reply && pending.has(d.reply)) {
      const resolve = pending.get(d.reply);
      pending.delete(d.reply);
      resolve(d.result);
      return;
    }
    const on = frames.get(e.source);
    if (on) on(d);
  });

  function frame(page, params, title) {
    const f = document.createElement('iframe');
    const q = new URLSearchParams(Object.assign({}, params, { origin: location.origin }));
    f.src = BASE + page + '#' + q.toString();
    f.title = title;
    f.setAttribute('allow', 'payment');
    f.style.border = '0';
    f.style.width = '100%';
    f.style.display = 'block';
    f.style.colorScheme = 'normal';
    return f;
  }

  // track follows a frame already in the document (its window proxy stays
  // the same through the navigation to its page); the promise resolves when
  // the frame's script says it listens.
  function track(f, onEvent) {
    let ready;
    const loaded = new Promise(r => { ready = r; });
    frames.set(f.contentWindow, d => {
      if (d.event === 'ready') ready();
      if (onEvent) onEvent(d);
    });
    return loaded;
  }

  function call(f, loaded, type, payload) {
    return loaded.then(() => new Promise(resolve => {
      const id = ++seq;
      pending.set(id, resolve);
      f.contentWindow.postMessage(Object.assign({ [TAG]: true, id, type }, payload || {}), ORIGIN);
    }));
  }

  function invalid(message) {
    return { error: { type: 'invalid_request_error', message } };
  }

  class PaymentElement {
    constructor(elements, options) {
      this._elements = elements;
      this._options = options || {};
      this._listeners = {};
      this._frame = null;
      this._loaded = null;
      this._complete = false;
    }
    mount(target) {
      const el = typeof target === 'string' ? document.querySelector(target) : target;
      if (!el) throw new Error('The selector you specified (' + target + ') applies to no DOM elements that are currently on the page.');
      if (this._frame) throw new Error('This Element is already mounted.');
      const o = this._elements._options;
      this._frame = frame('payment.html', { pk: this._elements._stripe._key, amount: o.amount || '', currency: o.currency || '' },
        'Secure payment input frame');
      this._frame.style.height = '150px';
      el.appendChild(this._frame);
      this._loaded = track(this._frame, d => this._event(d));
      return this;
    }
    _event(d) {
      if (d.event === 'resize' && this._frame) this._frame.style.height = d.payload.height + 'px';
      if (d.event === 'change') this._complete = !!d.payload.complete;
      const payload = Object.assign({ elementType: 'payment' }, d.payload || {});
      for (const cb of this._listeners[d.event] || []) cb(payload);
    }
    on(event, cb) { (this._listeners[event] = this._listeners[event] || []).push(cb); return this; }
    off(event, cb) { this._listeners[event] = (this._listeners[event] || []).filter(x => x !== cb); return this; }
    focus() { if (this._frame) call(this._frame, this._loaded, 'focus'); }
    unmount() { if (this._frame) { frames.delete(this._frame.contentWindow); this._frame.remove(); this._frame = null; } }
    destroy() { this.unmount(); if (this._elements._payment === this) this._elements._payment = null; }
    update(options) { Object.assign(this._options, options || {}); }
    _call(type, payload) {
      if (!this._frame) return Promise.resolve(invalid('The Payment Element is not mounted.'));
      return call(this._frame, this._loaded, type, payload);
    }
  }

  class Elements {
    constructor(stripe, options) {
      this._stripe = stripe;
      this._options = Object.assign({}, options || {});
      this._payment = null;
    }
    create(type, options) {
      if (type !== 'payment') throw new Error('The payment sandbox offers only the Payment Element, not "' + type + '".');
      if (this._payment) throw new Error('Can only create one Element of type payment.');
      this._payment = new PaymentElement(this, options);
      return this._payment;
    }
    getElement(type) { return type === 'payment' ? this._payment : null; }
    update(options) {
      Object.assign(this._options, options || {});
      if (this._payment) this._payment._call('update', { amount: this._options.amount, currency: this._options.currency });
    }
    async submit() {
      if (!this._payment) return invalid('elements.submit() needs a mounted Payment Element.');
      return this._payment._call('submit');
    }
    fetchUpdates() { return Promise.resolve({}); }
  }

  class StandIn {
    constructor(key) {
      this._key = key;
      this._controller = frame('controller.html', { pk: key }, 'Payment sandbox controller');
      this._controller.style.display = 'none';
      (document.body || document.documentElement).appendChild(this._controller);
      this._controllerLoaded = track(this._controller);
    }
    elements(options) { return new Elements(this, options); }
    async createPaymentMethod(arg) {
      const elements = arg && arg.elements;
      if (!elements || !elements._payment) return invalid('createPaymentMethod needs elements with a mounted Payment Element.');
      return elements._payment._call('createPaymentMethod', { params: (arg.params) || {} });
    }
    retrievePaymentIntent(clientSecret) {
      return call(this._controller, this._controllerLoaded, 'retrievePaymentIntent', { clientSecret });
    }
    async handleNextAction(arg) {
      const clientSecret = arg && arg.clientSecret;
      if (typeof clientSecret !== 'string' || !clientSecret.includes('_secret_')) return invalid('handleNextAction needs the PaymentIntent\'s clientSecret.');
      let r = await this.retrievePaymentIntent(clientSecret);
      if (r.error || r.paymentIntent.status !== 'requires_action') return r;
      await challenge(clientSecret, this._key);
      r = await this.retrievePaymentIntent(clientSecret);
      if (r.error) return r;
      const pi = r.paymentIntent;
      if (pi.status === 'requires_payment_method' || pi.status === 'requires_action') {
        return { error: { type: 'invalid_request_error', code: 'payment_intent_authentication_failure',
          message: (pi.last_payment_error && pi.last_payment_error.message) || 'We are unable to authenticate your payment method. Please choose a different payment method and try again.',
          payment_intent: pi } };
      }
      return { paymentIntent: pi };
    }
    // confirmPayment is Stripe.js's client-side confirmation; the Encore
    // app confirms on its server instead (createPaymentMethod, then
    // handleNextAction), so the stand-in does not offer it.
    confirmPayment() { return Promise.resolve(invalid('The payment sandbox\'s stand-in does not offer confirmPayment: create the payment method, confirm on the server, then handleNextAction.')); }
  }

  // challenge shows the bank's 3-D Secure page as a modal over the page
  // and resolves when the fan has answered it (or closed it).
  function challenge(clientSecret, key) {
    return new Promise(resolve => {
      const overlay = document.createElement('div');
      overlay.setAttribute('role', 'dialog');
      overlay.setAttribute('aria-modal', 'true');
      overlay.setAttribute('aria-label', 'Confirm the payment with your bank');
      Object.assign(overlay.style, { position: 'fixed', inset: '0', background: 'rgba(14,26,43,.55)', zIndex: '2147483647',
        display: 'flex', alignItems: 'center', justifyContent: 'center' });
      const f = frame('challenge.html', { pk: key, client_secret: clientSecret }, '3-D Secure authentication');
      Object.assign(f.style, { width: 'min(26rem, 94vw)', height: '22rem', background: '#fff', borderRadius: '.5rem' });
      overlay.appendChild(f);
      document.body.appendChild(overlay);
      const done = () => { frames.delete(f.contentWindow); overlay.remove(); resolve(); };
      track(f, d => { if (d.event === 'challengeDone') done(); });
    });
  }

  window.Stripe = function Stripe(key) {
    if (typeof key !== 'string' || !/^pk_(test|live)_/.test(key)) {
      throw new Error('Invalid value for Stripe(): apiKey should be a publishable key (pk_test_ or pk_live_).');
    }
    return new StandIn(key);
  };
  window.Stripe.version = 3;
  window.Stripe.sandbox = true;
})();
