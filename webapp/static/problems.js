import { t, locale } from './i18n.js';

// amount writes a problem's {amount, currency} (minor units) as money.
function amount(m) {
  try {
    const f = new Intl.NumberFormat(locale(), { style: 'currency', currency: m.currency });
    return f.format(m.amount / 10 ** f.resolvedOptions().maximumFractionDigits);
  } catch { return (m.amount / 100).toFixed(2) + ' ' + m.currency; }
}

// night writes a problem's night (YYYY-MM-DD, a calendar date) as the
// fan's language writes a date.
function night(d) {
  try { return new Intl.DateTimeFormat(locale(), { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'short' }).format(new Date(d + 'T00:00:00Z')); } catch { return d; }
}

// message turns an RFC 9457 problem into a sentence a fan can act on.
export function message(p, retryAfter) {
  const name = String(p && p.type || '').replace(/^.*\/problems\//, '');
  const wait = ' ' + (retryAfter ? t('Please wait {n} seconds and try again.', { n: retryAfter }) : t('Please wait a moment and try again.'));
  switch (name) {
    case 'seat-unavailable': {
      const gone = (p.unavailable_seat_ids || []).join(', ');
      const alt = (p.alternatives || []).length;
      return (gone ? t('Sorry, seat {seat} was just taken.', { seat: gone }) : t('Sorry, these seats were just taken.')) + ' ' +
        (alt ? t(alt > 1 ? 'We found {n} other seats nearby you can take instead.' : 'We found {n} other seat nearby you can take instead.', { n: alt }) : t('Please pick other seats.'));
    }
    case 'hold-expired': return t('Your hold has expired and the seats were released. Please pick your seats again.');
    case 'rate-limited': return t('Too many requests right now.') + wait;
    case 'queue-required': return t('This sale uses a waiting room. Please join the queue to continue.');
    case 'purchase-limit': return p.limit ? t('You have reached the ticket limit for this event ({n} tickets).', { n: p.limit }) : t('You have reached the ticket limit for this event.');
    case 'pending-checkout': return t('You already have seats on hold for this event. Finish or release that hold first.');
    case 'not-on-sale': return p.onsale_at ? t('Tickets go on sale {date}.', { date: new Date(p.onsale_at).toLocaleString(locale()) }) : t('This event is not on sale.');
    case 'payment-declined': return t('Your card was declined') + (p.decline_code ? ` (${p.decline_code.replace(/_/g, ' ')})` : '') + '. ' + t('Please try another card.');
    case 'payment-refused': return t('We could not accept this payment. Please contact support.');
    case 'promotion-unavailable': return t('This promotion code cannot be used.');
    case 'hold-not-pending': return t('This hold is already paid or has ended.');
    case 'booking-not-cancellable': return t("This booking can no longer be cancelled under the event's policy.");
    case 'unauthorized': return t('Please sign in first.');
    case 'forbidden': return t('You are not allowed to do this.');
    case 'not-found': return t('We could not find that.');
    case 'unavailable': return t('The service is busy.') + wait;
    case 'invalid-request': return t('Please check: {what}', { what: (p.errors || []).map(e => e.field + ' ' + e.message).join('; ') || p.detail || t('the request') });
    case 'idempotency-key-reused': case 'request-in-progress': return t('That request is already being handled. Please wait.');
    case 'challenge-required': return t('Please complete the check to join the waiting room.');
    case 'admitted-elsewhere': return t('You were admitted on another device.');
    case 'ticket-transferred': return t('You sent this ticket to someone else: it no longer opens the door.');
    case 'ticket-on-another-device': return t("This ticket is now on another device: show it from there. To bring it back, open it again here while online (the other device's code then stops working).");
    case 'ticket-listed': return t('This ticket is listed for resale: it does not open the door. Withdraw the listing in My tickets to use or send it.');
    case 'ticket-not-listable': return t('This ticket cannot be listed now: it is already listed, being sent to someone, or was used at the door.');
    case 'resale-closed': return p.detail ? t('Resale is not open for this event: {why}.', { why: p.detail }) : t('Resale is not open for this event.');
    case 'price-above-cap': return p.cap ? t('The organiser caps resale of this ticket at {price}.', { price: amount(p.cap) }) : t('This price is above what the organiser allows for resale.');
    case 'listing-unavailable': return t('Sorry, this ticket was just taken by another fan or is no longer on sale. Please pick another one.');
    case 'listing-not-active': return t('This listing was already sold, withdrawn or has expired.');
    case 'listing-held': return t('A buyer is paying for this ticket right now, so it cannot be withdrawn. If their payment does not go through, you can withdraw it then.');
    case 'resale-limit': return t('You have reached the resale limit: this ticket was resold or listed as often as allowed, or you have as many tickets listed as allowed.');
    case 'no-invoice': return t('There is no such document for this booking yet: the invoice comes with the tickets of a paid booking, a credit note with its refund. Please try again in a moment.');
    case 'room-unavailable': return p.night ? t('Sorry, the room was just taken for the night of {date}. Please pick another room or other nights.', { date: night(p.night) })
      : t('Sorry, that room was just taken or is no longer on sale for those nights. Please pick another room or other nights.');
    case 'stay-limit': return p.limit ? t('You have reached the limit of unpaid room-nights ({n}). Pay for or release a hold first.', { n: p.limit })
      : t('You have reached the limit of unpaid room-nights. Pay for or release a hold first.');
    case 'stay-already-held': return t('You already have this hotel on hold for one of these nights. Pay for or release that hold first.');
    default: return (p && (p.title || p.detail)) || t('Something went wrong. Please try again.');
  }
}
