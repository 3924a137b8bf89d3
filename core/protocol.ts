/**
 * The wire protocol shared by the listener, the relay and the web app: import it from here.
 * These zod schemas are the source of truth; docs/protocol.md describes them for people. They live in three parts:
 *
 *   core/protocolCodes.ts   limits, error and refusal codes, the field schemas the other two share
 *   core/protocolHttp.ts    HTTP bodies: pushes, computers, devices, pairing, errors
 *   core/protocolFrames.ts  WebSocket frames (the session inventory, pushes, live panes), close codes, parseFrame
 */
export * from './protocolCodes.js';
export * from './protocolFrames.js';
export * from './protocolHttp.js';
