/**
 * The service worker: the app shell (the files the build wrote, listed in SHELL) comes from the cache, so the app
 * opens without a network and shows the last inventory it saw. Nothing else is touched: API answers, pushes and
 * pane frames always go to the relay and are never stored here. Web Push notifications: push/swPush.ts.
 */
/// <reference lib="webworker" />
import { handlePushes } from './push/swPush.js';

declare const self: ServiceWorkerGlobalScope;
/** Filled in by build.mjs: the build's id and its files. */
declare const BUILD_ID: string;
declare const SHELL: string[];

const CACHE = `svc-shell-${BUILD_ID}`;
const shell = new Set(SHELL);

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(names.filter((n) => n.startsWith('svc-shell-') && n !== CACHE).map((n) => caches.delete(n))),
      )
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate' && url.pathname === '/') {
    // The page itself: the network first (a new build shows at once), the cached one when offline.
    event.respondWith(fetch(request).catch(async () => (await caches.match('/')) ?? Response.error()));
    return;
  }
  if (!shell.has(url.pathname)) return;
  event.respondWith(caches.match(url.pathname).then((hit) => hit ?? fetch(request)));
});

// Web Push: sealed notifications opened with the device key (push/swPush.ts).
handlePushes(self);
