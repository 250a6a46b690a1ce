// The Encore gate scanner: pairs with the gate, reads ticket codes from the
// camera (BarcodeDetector where the browser has it, else the vendored jsQR),
// asks the gate (POST /v1/scan) and answers full screen, green or red, with
// the reason in words, a beep and a buzz. Everything comes from the gate
// that serves this page: it keeps working on the venue network with the
// internet down.

const $ = (id) => document.getElementById(id);
const store = {
  get: (k) => localStorage.getItem('encore.gate.' + k) || '',
  set: (k, v) => localStorage.setItem('encore.gate.' + k, v),
  del: (k) => localStorage.removeItem('encore.gate.' + k),
};

// An ID the gate accepts as a gate_id: the scanner's name, simplified.
function slug(name) {
  return (name || '').trim().replace(/[^A-Za-z0-9_.:-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64) || 'gate';
}

function time(iso) {
  return new Date(iso).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
}

// ---- The gate's API ----

class Unpaired extends Error {}

async function api(method, path, body) {
  const headers = { Authorization: 'Bearer ' + store.get('token') };
  if (body) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined, cache: 'no-store' });
  if (resp.status === 401) throw new Unpaired();
  const data = await resp.json().catch(() => ({}));
  return { status: resp.status, data };
}

function unpaired(message) {
  store.del('token');
  store.del('device');
  showPair(message);
}

// ---- Sound and vibration ----

let audio;
function beep(ok) {
  try {
    audio = audio || new AudioContext();
    if (audio.state === 'suspended') audio.resume();
    const tones = ok ? [[880, 0, 0.12]] : [[220, 0, 0.18], [220, 0.25, 0.18]];
    for (const [freq, at, len] of tones) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.type = ok ? 'sine' : 'square';
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.25, audio.currentTime + at);
      gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + at + len);
      osc.connect(gain).connect(audio.destination);
      osc.start(audio.currentTime + at);
      osc.stop(audio.currentTime + at + len + 0.02);
    }
  } catch (e) { /* no sound: the screen still says it */ }
  if (navigator.vibrate) navigator.vibrate(ok ? 120 : [250, 120, 250]);
}

// ---- The answer, full screen ----

// words turns a gate's result into what staff read at a glance.
function words(r) {
  if (r.result === 'accepted') {
    if (r.direction === 'out') return ['OUT', 'Scanned out' + (r.manual ? ' (manual)' : '')];
    return [r.reentry ? 'WELCOME BACK' : 'IN', r.manual ? 'Admitted by lookup' : 'Valid ticket'];
  }
  const moved = r.moved_at ? ' through gate ' + r.moved_gate_id : '';
  switch (r.reason) {
    case 'already_used':
      if (r.inside && r.moved_at) return ['NO ENTRY', 'Already inside: back in at ' + time(r.moved_at) + moved];
      if (r.inside === false && r.moved_at) {
        return ['NO ENTRY', 'Already entered at ' + time(r.first_entry_at) + ' through gate ' + r.first_gate_id +
          '; went out at ' + time(r.moved_at) + moved + ' (no re-entry)'];
      }
      return ['NO ENTRY', 'Already entered at ' + time(r.first_entry_at) + ' through gate ' + r.first_gate_id];
    case 'revoked': return ['NO ENTRY', 'Revoked: this ticket was refunded or cancelled'];
    case 'other_device': return ['NO ENTRY', 'Moved to another phone: ask for the ticket on the phone that holds it now'];
    case 'transferred': return ['NO ENTRY', 'Transferred: this ticket was handed to someone else, who holds a new one'];
    case 'wrong_event': return ['NO ENTRY', 'Wrong event: this ticket is for another show'];
    case 'wrong_zone': return ['NO ENTRY', 'Wrong zone: section ' + r.section_id + ' is not in zone ' + r.zone];
    case 'stale_window': return ['NO ENTRY', 'Code expired or not valid yet: ask for the live ticket, not a screenshot'];
    case 'invalid_code': return ['NO ENTRY', 'Not a valid ticket code'];
    case 'unknown_ticket': return ['NO ENTRY', 'Unknown ticket: not on this event\u2019s list'];
    case 'manifest_expired': return ['STOP', 'The gate\u2019s ticket list has expired: call the supervisor'];
    case 'not_inside':
      if (r.moved_at) return ['NOT INSIDE', 'Already went out at ' + time(r.moved_at) + moved];
      return ['NOT INSIDE', 'This ticket never came in'];
    case 'unavailable': return ['STOP', 'The gate is unavailable: nobody enters until it is back. Try again.'];
    default: return ['NO ENTRY', r.detail || r.reason || 'Refused'];
  }
}

let hideTimer;
function show(r) {
  const ok = r.result === 'accepted';
  const [verdict, reason] = words(r);
  const el = $('result');
  el.className = ok ? 'ok' : 'bad';
  el.dataset.result = r.result || 'error';
  el.dataset.reason = r.reason || '';
  $('verdict').textContent = verdict;
  $('reason').textContent = reason;
  const place = [];
  if (r.seat_id) place.push('Seat ' + r.seat_id);
  if (r.section_id) place.push('Section ' + r.section_id);
  $('seat').textContent = place.join(' \u00b7 ');
  el.hidden = false;
  el.focus();
  beep(ok);
  clearTimeout(hideTimer);
  hideTimer = setTimeout(hide, ok ? 2500 : 5000);
  refreshCounts();
}

function hide() {
  clearTimeout(hideTimer);
  $('result').hidden = true;
}

function showError(message) {
  show({ result: 'error', reason: 'network', detail: message });
}

// ---- Settings: gate, direction, zone ----

function settings() {
  return { gate_id: $('gate-id').value.trim() || slug(store.get('name')), direction: store.get('direction') || 'in',
    zone: $('zone').value || undefined };
}

function setDirection(d) {
  store.set('direction', d);
  for (const b of document.querySelectorAll('.direction button')) b.setAttribute('aria-pressed', String(b.dataset.direction === d));
}

// ---- Scanning ----

const recent = new Map(); // ticket ID -> when it was last answered
const again = 8000; // the same ticket held in view is not asked twice within this
let busy = false;

async function check(payload, source) {
  payload = (payload || '').trim();
  if (!payload || busy || !$('result').hidden) return;
  const ticket = payload.split('.')[0];
  if (source === 'camera' && Date.now() - (recent.get(ticket) || 0) < again) return;
  busy = true;
  try {
    const { data } = await api('POST', '/v1/scan', { payload, ...settings() });
    recent.set(ticket, Date.now());
    show(data);
  } catch (e) {
    if (e instanceof Unpaired) unpaired('This scanner was unpaired. Pair it again.');
    else showError('No answer from the gate: check the venue network and try again');
  } finally {
    busy = false;
  }
}

async function detector() {
  if ('BarcodeDetector' in window) {
    try {
      const formats = await window.BarcodeDetector.getSupportedFormats();
      if (formats.includes('qr_code')) {
        const d = new window.BarcodeDetector({ formats: ['qr_code'] });
        return { name: 'BarcodeDetector', decode: async (src) => ((await d.detect(src))[0] || {}).rawValue };
      }
    } catch (e) { /* fall back to jsQR */ }
  }
  await new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = '/vendor/jsqr/jsQR.js';
    s.onload = resolve;
    s.onerror = () => reject(new Error('the QR decoder did not load'));
    document.head.append(s);
  });
  const canvas = document.createElement('canvas');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  return {
    name: 'jsQR',
    decode: async (video) => {
      const scale = Math.min(1, 640 / video.videoWidth);
      canvas.width = Math.round(video.videoWidth * scale);
      canvas.height = Math.round(video.videoHeight * scale);
      ctx.drawImage(video, 0, 0, canvas.width, canvas.height);
      const img = ctx.getImageData(0, 0, canvas.width, canvas.height);
      const code = window.jsQR(img.data, img.width, img.height, { inversionAttempts: 'dontInvert' });
      return code ? code.data : undefined;
    },
  };
}

async function startCamera() {
  const status = $('camera-status');
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    status.textContent = 'No camera here (the page needs HTTPS or localhost for one): type or scan codes into the box, or look fans up.';
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
  } catch (e) {
    status.textContent = 'Camera unavailable (' + e.name + '): type or scan codes into the box, or look fans up.';
    return;
  }
  const video = $('video');
  video.srcObject = stream;
  await video.play().catch(() => {});
  let dec;
  try {
    dec = await detector();
  } catch (e) {
    status.textContent = 'Camera on, but ' + e.message + ': type codes into the box.';
    return;
  }
  status.textContent = 'Point the camera at the ticket\u2019s code';
  status.dataset.decoder = dec.name;
  const tick = async () => {
    if (video.readyState >= 2 && $('result').hidden && !busy && document.body.dataset.screen === 'scan') {
      try {
        const payload = await dec.decode(video);
        if (payload) await check(payload, 'camera');
      } catch (e) { /* a frame that did not decode */ }
    }
    setTimeout(tick, 150);
  };
  tick();
}

// ---- Lookup and manual admit ----

async function lookup(q) {
  const list = $('lookup-results');
  list.textContent = '';
  try {
    const { status, data } = await api('GET', '/v1/lookup?q=' + encodeURIComponent(q));
    if (status !== 200) {
      list.append(item(data.detail || 'Lookup failed'));
      return;
    }
    if (!data.tickets.length) list.append(item('No ticket matches \u201c' + q + '\u201d'));
    for (const t of data.tickets) {
      const b = document.createElement('button');
      b.type = 'button';
      b.dataset.ticket = t.ticket_id;
      const title = document.createElement('strong');
      title.textContent = (t.seat_id ? 'Seat ' + t.seat_id : 'Section ' + t.section_id) + (t.attendee ? ' \u2014 ' + t.attendee : '');
      const state = document.createElement('span');
      state.className = 'state';
      state.textContent = 'Booking ' + (t.booking_code || '?').slice(0, 8).toUpperCase() + ' \u00b7 ' +
        (t.revoked ? 'revoked' : t.entered_at ? 'entered ' + time(t.entered_at) + ' at gate ' + t.gate_id + (t.inside ? '' : ', out now') : 'not entered') +
        ' \u00b7 tap to ' + (settings().direction === 'out' ? 'scan out' : 'admit');
      b.append(title, state);
      b.addEventListener('click', () => admit(t.ticket_id));
      const li = document.createElement('li');
      li.append(b);
      list.append(li);
    }
  } catch (e) {
    if (e instanceof Unpaired) unpaired('This scanner was unpaired. Pair it again.');
    else list.append(item('No answer from the gate'));
  }
}

function item(text) {
  const li = document.createElement('li');
  li.textContent = text;
  return li;
}

async function admit(ticketID) {
  try {
    const { data } = await api('POST', '/v1/admit', { ticket_id: ticketID, ...settings() });
    $('lookup-results').textContent = '';
    $('lookup-q').value = '';
    show(data);
  } catch (e) {
    if (e instanceof Unpaired) unpaired('This scanner was unpaired. Pair it again.');
    else showError('No answer from the gate: try again');
  }
}

// ---- Counts ----

async function refreshCounts() {
  if (document.body.dataset.screen !== 'scan') return;
  try {
    const { status, data } = await api('GET', '/v1/counts');
    if (status !== 200) return;
    const mine = data.gates.find((g) => g.gate_id === settings().gate_id);
    const parts = ['This gate ' + (mine ? mine.entries : 0), 'All gates ' + data.entered + ' / ' + data.tickets];
    parts.push('Inside ' + data.inside);
    $('counts').textContent = parts.join(' \u00b7 ');
    $('counts').dataset.entered = String(data.entered);
  } catch (e) {
    if (e instanceof Unpaired) unpaired('This scanner was unpaired. Pair it again.');
    else $('counts').textContent = 'Gate not answering';
  }
}

// ---- Screens ----

function showPair(message) {
  document.body.dataset.screen = 'pair';
  $('scan').hidden = true;
  $('pair').hidden = false;
  const err = $('pair-error');
  err.textContent = message || '';
  err.hidden = !message;
  $('pair-code').focus();
}

let started = false;
async function showScan() {
  let cfg;
  try {
    const r = await api('GET', '/v1/config');
    cfg = r.data;
  } catch (e) {
    if (e instanceof Unpaired) return unpaired('This scanner is not paired (or was unpaired). Pair it again.');
    cfg = { zones: [] }; // the gate is not answering: scan anyway, it will say so
  }
  document.body.dataset.screen = 'scan';
  $('pair').hidden = true;
  $('scan').hidden = false;
  $('device').textContent = (store.get('name') || store.get('device')) + (cfg.event_id ? ' \u00b7 event ' + cfg.event_id : '') +
    (cfg.reentry ? ' \u00b7 re-entry allowed' : '');
  $('gate-id').value = store.get('gate') || slug(store.get('name'));
  const zone = $('zone');
  zone.length = 1;
  for (const z of cfg.zones || []) zone.add(new Option(z.name + ' (' + z.sections.join(', ') + ')', z.name));
  zone.value = (cfg.zones || []).some((z) => z.name === store.get('zone')) ? store.get('zone') : '';
  $('zone-label').hidden = !(cfg.zones || []).length;
  setDirection(store.get('direction') || 'in');
  refreshCounts();
  if (!started) {
    started = true;
    setInterval(refreshCounts, 4000);
    startCamera();
  }
}

async function pair(ev) {
  ev.preventDefault();
  const err = $('pair-error');
  err.hidden = true;
  // The tap that pairs also unlocks sound on phones.
  try { audio = audio || new AudioContext(); } catch (e) { /* no sound */ }
  const name = $('pair-name').value.trim();
  let resp;
  try {
    resp = await fetch('/v1/pair', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: $('pair-code').value, name: name || undefined }) });
  } catch (e) {
    return showPair('No answer from the gate: check the venue network.');
  }
  const data = await resp.json().catch(() => ({}));
  if (resp.status !== 201) return showPair(data.detail || 'Pairing failed');
  store.set('token', data.token);
  store.set('device', data.device_id);
  store.set('name', data.name);
  $('pair-code').value = '';
  showScan();
}

function init() {
  $('pair-form').addEventListener('submit', pair);
  $('code-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const v = $('code-input').value;
    $('code-input').value = '';
    check(v, 'typed');
  });
  $('lookup-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('lookup-q').value.trim();
    if (q.length >= 2) lookup(q);
  });
  $('result').addEventListener('click', hide);
  $('result').addEventListener('keydown', hide);
  $('gate-id').addEventListener('change', () => { store.set('gate', slug($('gate-id').value)); $('gate-id').value = slug($('gate-id').value); refreshCounts(); });
  $('zone').addEventListener('change', () => store.set('zone', $('zone').value));
  for (const b of document.querySelectorAll('.direction button')) b.addEventListener('click', () => setDirection(b.dataset.direction));
  $('unpair').addEventListener('click', () => unpaired(''));
  if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {});
  if (store.get('token')) showScan();
  else showPair('');
}

init();
