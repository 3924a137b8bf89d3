/**
 * `svc debug`: look inside the running listener through its control socket (actors/daemon/controlSocket.ts).
 * `state` prints the live actor tree, `events` the transitions, `ui` serves a page that draws both;
 * `charts` (hidden, `npm run charts`) writes docs/statecharts/ from the machine definitions.
 */
import { defineCommand } from 'citty';

export default defineCommand({
  meta: { name: 'debug', description: 'Look inside the running listener: its actors, their states, what they do' },
  subCommands: {
    state: () => import('./state.js').then((m) => m.default),
    events: () => import('./events.js').then((m) => m.default),
    ui: () => import('./ui.js').then((m) => m.default),
    charts: () => import('./charts.js').then((m) => m.default),
  },
});
