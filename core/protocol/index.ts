/**
 * The wire protocol shared by the listener, the relay and the web app: import it from here.
 * These zod schemas are the source of truth; docs/protocol.md describes them for people. They live in three parts:
 *
 *   core/protocol/codes.ts   limits, error and refusal codes, the field schemas the other two share
 *   core/protocol/http.ts    HTTP bodies: pushes, computers, devices, pairing, errors
 *   core/protocol/frames.ts  WebSocket frames (the session inventory, pushes, live panes), close codes, parseFrame
 */
export * from './codes.js';
export * from './frames.js';
export * from './http.js';
export * from './issues.js';
