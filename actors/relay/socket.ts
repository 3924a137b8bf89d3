/**
 * The real WebSocket behind the relay link machine. One socket per invocation; stopping the actor closes it.
 * The API key goes in the Authorization header of the upgrade, never in the URL; redirects are not followed.
 */
import type { Agent } from 'node:http';
import WebSocket from 'ws';
import { fromCallback } from 'xstate';
import { MAX_WS_FRAME_BYTES, parseFrame, RelayFrame } from '../../core/protocol/index.js';
import type { RelayLinkEvent, RelaySocketCommand, RelaySocketInput } from '../../machines/relayLink.js';
import { tunnelAgent } from './proxy.js';

export type SocketEvent = Extract<RelayLinkEvent, { type: `SOCKET.${string}` }>;

export const relaySocketLogic = fromCallback<RelaySocketCommand, RelaySocketInput>(({ input, sendBack, receive }) => {
  const emit = (event: SocketEvent) => sendBack(event as RelayLinkEvent);
  // until the socket exists (a proxy's library still loading): nothing to send on, and stopping means not opening it
  let stopped = false;
  let send = (_command: RelaySocketCommand) => {};
  let stop = () => {
    stopped = true;
  };
  receive((command) => send(command));
  let agent: ReturnType<typeof tunnelAgent>;
  try {
    agent = tunnelAgent(input.wsUrl);
  } catch (err) {
    // a proxy setting that is not a proxy URL: said, and tried again later like any failed connection
    emit({ type: 'SOCKET.ERROR', message: `proxy setting: ${(err as Error).message}` });
    return () => {};
  }
  const open = (proxyAgent: Agent | null) => {
    if (stopped) return;
    ({ send, stop } = connect(input, emit, proxyAgent));
  };
  if (agent === null) open(null);
  else
    agent.then(open, (err: Error) => {
      if (!stopped) emit({ type: 'SOCKET.ERROR', message: `proxy: ${err.message}` });
    });
  return () => stop();
});

/** The socket itself: what to send on it and how to close it. */
function connect(
  input: RelaySocketInput,
  emit: (event: SocketEvent) => void,
  agent: Agent | null,
): { send(command: RelaySocketCommand): void; stop(): void } {
  const ws = new WebSocket(input.wsUrl, {
    // through the configured proxy (a CONNECT tunnel), if one applies (actors/relay/proxy.ts)
    ...(agent ? { agent } : {}),
    headers: { Authorization: `Bearer ${input.apiKey}` },
    followRedirects: false,
    maxPayload: MAX_WS_FRAME_BYTES,
    handshakeTimeout: 10_000,
  });
  let closed = false;

  ws.on('open', () => {
    emit({ type: 'SOCKET.OPEN' });
    ws.send(JSON.stringify(input.subscribe));
  });
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      emit({ type: 'SOCKET.BAD_FRAME', message: 'relay sent a bad_frame: binary frames are not part of the protocol' });
      return;
    }
    const parsed = parseFrame(RelayFrame, data.toString());
    if (parsed.ok) emit({ type: 'SOCKET.FRAME', frame: parsed.value, receivedAt: Date.now() });
    else emit({ type: 'SOCKET.BAD_FRAME', message: `relay sent a ${parsed.code}: ${parsed.message}`.slice(0, 300) });
  });
  ws.on('pong', () => emit({ type: 'SOCKET.PONG' }));
  ws.on('unexpected-response', (_req, res) => {
    closed = true;
    emit({ type: 'SOCKET.REJECTED', status: res.statusCode ?? 0 });
    res.resume();
    ws.terminate();
  });
  ws.on('close', (code, reason) => {
    if (closed) return;
    closed = true;
    emit({ type: 'SOCKET.CLOSED', code, reason: reason.toString() });
  });
  ws.on('error', (err) => {
    if (closed) return;
    // 'close' follows an error when the socket had opened; before that, report the error itself.
    if (ws.readyState !== WebSocket.OPEN) {
      closed = true;
      emit({ type: 'SOCKET.ERROR', message: err.message });
    }
  });

  return {
    send(command) {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (command.type === 'PING') ws.ping();
      else ws.send(JSON.stringify(command.frame));
    },
    stop() {
      closed = true;
      ws.removeAllListeners('message');
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000, 'listener closing');
      ws.on('error', () => {});
    },
  };
}
