/**
 * Node's `http` and `https`, required rather than imported. An ESM `import` of `node:http` reads every one of its
 * exports, and reading its lazy `WebSocket` export loads undici (with http2, worker_threads, perf_hooks, …): 12-16 MiB
 * a process keeps for good (docs/benchmarks.md, "Idle memory"). `require` reads none of them. `node:https` has no
 * such export; it is here so that a request takes either from one place. Type imports cost nothing and stay imports.
 */
import type * as Http from 'node:http';
import type * as Https from 'node:https';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const http: typeof Http = require('node:http');
export const https: typeof Https = require('node:https');
