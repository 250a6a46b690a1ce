// The scanner app's service worker: keeps the app's own files so the page
// opens again when the gate restarts or the phone briefly loses the venue
// network. API calls (/v1/) always go to the gate: a scan is never answered
// from a cache.
const CACHE = 'encore-gate-v1';
const SHELL = ['/', '/app.js', '/app.css', '/vendor/jsqr/jsQR.js', '/manifest.webmanifest'];

self.addEventListener('install', (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (e) => {
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== self.location.origin || !SHELL.includes(url.pathname)) {
    return; // the network, as if there were no worker
  }
  // Network first (a gate upgrade reaches the scanner), the cache when the
  // gate does not answer.
  e.respondWith(fetch(e.request).then((resp) => {
    const copy = resp.clone();
    if (resp.ok) caches.open(CACHE).then((c) => c.put(e.request, copy));
    return resp;
  }).catch(() => caches.match(e.request)));
});
