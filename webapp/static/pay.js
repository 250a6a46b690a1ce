// The payment form: the provider's Payment Element (Stripe.js with a real
// account, the payment sandbox's stand-in for it in development), mounted
// for the hold's amount. The card is typed into the provider's frame and
// becomes a payment method there: card numbers never reach this page or
// Encore's servers. The checkout then authorises that payment method on
// the server (the booking saga's step), and a 3-D Secure check the bank
// asks for opens over the page (handleNextAction).
import { get } from './api.js';
import { lang, t } from './i18n.js';

let config, script;

// paymentConfig is GET /v1/payments/config, asked once per page load.
export function paymentConfig() {
  config ||= get('/v1/payments/config').catch(err => { config = null; throw err; });
  return config;
}

function loadScript(src) {
  script ||= new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = () => (window.Stripe ? resolve(window.Stripe) : reject(new Error(t('The payment form did not load.'))));
    s.onerror = () => { script = null; s.remove(); reject(new Error(t('The payment form could not load. Check your connection and try again.'))); };
    document.head.append(s);
  });
  return script;
}

// PaymentForm is one mounted Payment Element for an amount.
export class PaymentForm {
  static async mount(el, total, onChange) {
    const cfg = await paymentConfig();
    if (!cfg.js_url || !cfg.publishable_key) throw new Error(t('Payments are not set up on this site.'));
    const Stripe = await loadScript(cfg.js_url);
    const f = new PaymentForm();
    f.sandbox = !!cfg.sandbox;
    f.stripe = Stripe(cfg.publishable_key);
    f.elements = f.stripe.elements({
      mode: 'payment', amount: total.amount, currency: String(total.currency).toLowerCase(),
      captureMethod: 'manual', paymentMethodCreation: 'manual', locale: lang(), // the provider's own words in the fan's language
      appearance: { theme: 'stripe', variables: { colorPrimary: '#0b5cad', borderRadius: '6px' } },
    });
    f.element = f.elements.create('payment', { layout: 'tabs' });
    if (onChange) f.element.on('change', onChange);
    const ready = new Promise(resolve => f.element.on('ready', resolve));
    f.element.mount(el);
    f.ready = ready;
    return f;
  }

  // paymentMethod checks the form and turns it into a payment method:
  // {id} or {error: {message, type, code}} to show the fan.
  async paymentMethod(email) {
    const submitted = await this.elements.submit();
    if (submitted.error) return { error: submitted.error };
    const params = email ? { billing_details: { email } } : {};
    const r = await this.stripe.createPaymentMethod({ elements: this.elements, params });
    return r.error ? { error: r.error } : { id: r.paymentMethod.id };
  }

  // confirm runs the bank's check the intent waits on, if any: {} when the
  // payment is authorised, or {error}.
  async confirm(clientSecret) {
    const r = await this.stripe.handleNextAction({ clientSecret });
    return r.error ? { error: r.error } : {};
  }

  destroy() { try { this.element.destroy(); } catch { /* already gone */ } }
}
