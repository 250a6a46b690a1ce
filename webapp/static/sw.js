// The fan app's service worker: the app keeps opening with no connection,
// so a ticket page opened once online still shows its codes at the door.
// The server fills in ASSETS (every file of the fan app) and VERSION (a
// digest of them all), so a new release replaces the cache in one step.
// API calls are never cached: they are live or fail, and the page falls
// back to what it keeps itself (wallet.js).
const VERSION = '__VERSION__';
const ASSETS = __ASSETS__;
const CACHE = 'encore-app-' + VERSION;

self.addEventListener('install', event => {
  event.waitUntil(caches.open(CACHE).then(c => c.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', event => {
  event.waitUntil(caches.keys()
    .then(names => Promise.all(names.filter(n => n.startsWith('encore-app-') && n !== CACHE).map(n => caches.delete(n))))
    .then(() => self.clients.claim()));
});

// The app's own files: the network first (files revalidate cheaply and a
// fix reaches fans at once), the cache when there is no network.
self.addEventListener('fetch', event => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || url.origin !== self.location.origin) return;
  const path = url.pathname;
  if (path !== '/' && !path.startsWith('/app/')) return;
  event.respondWith(fetch(req).then(res => {
    if (res.ok) { const copy = res.clone(); caches.open(CACHE).then(c => c.put(path === '/' ? '/' : req, copy)); }
    return res;
  }).catch(() => caches.match(path === '/' ? '/' : req, { ignoreSearch: true })
    .then(hit => hit || new Response('Offline, and this page was never opened here.', { status: 503, headers: { 'Content-Type': 'text/plain' } }))));
});
