/**
 * `svc mcp`: an MCP server on stdio (@modelcontextprotocol/sdk) with `svc_ask` and `svc_notify` (docs/mcp.md).
 * Each call goes to the listener's control socket (owner-only, ~/.svc/listener.sock); the listener seals, the relay
 * routes, the phone answers. Every outcome is a tool result in words the model can act on: no listener, no paired
 * phone, no answer in time. Nothing goes to stdout but MCP messages; the few log lines go to stderr.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ControlReply } from '../../core/daemon/control.js';
import { VERSION } from '../../core/daemon/version.js';
import { ASK_FAILURE_TEXT, type AskOutcome, askResultText } from '../../core/mcp/ask.js';
import {
  ASK_DESCRIPTION,
  ASK_TOOL,
  askInput,
  askOutput,
  NOTIFY_DESCRIPTION,
  NOTIFY_TOOL,
  notifyInput,
  notifyOutput,
} from '../../core/mcp/tools.js';
import type { AskCode } from '../../core/protocol/codes.js';
import { ControlUnavailable, controlConnect } from '../daemon/controlSocket.js';

/** After the deadline, how long the server waits for the listener's word before answering expired itself. */
const GRACE_MS = 5_000;

type AskRequest = { session: string; question: string; choices: string[]; timeoutSeconds?: number };

const failed = (code: AskCode, message?: string): AskOutcome => ({
  state: 'failed',
  code,
  message: message ?? ASK_FAILURE_TEXT[code] ?? code,
});

/** One ask through the control socket; resolves with how it ended, never rejects. */
export async function askThroughListener(
  svcDir: string,
  request: AskRequest,
): Promise<{ outcome: AskOutcome; clamped: boolean }> {
  let clamped = false;
  let settle!: (o: AskOutcome) => void;
  const ended = new Promise<AskOutcome>((resolve) => {
    settle = resolve;
  });
  let timer: NodeJS.Timeout | undefined;
  const onReply = (reply: ControlReply) => {
    if (reply.type === 'ask.started') {
      clamped = reply.clamped;
      timer = setTimeout(
        () => settle({ state: 'expired', seconds: reply.seconds }),
        Math.max(0, reply.deadline - Date.now()) + GRACE_MS,
      );
    } else if (reply.type === 'ask.done') settle(reply.outcome);
    else if (reply.type === 'error')
      settle(failed('no_listener', `the listener refused the ask: ${reply.error.message}`));
  };
  let conn: Awaited<ReturnType<typeof controlConnect>>;
  try {
    conn = await controlConnect(svcDir, { type: 'ask', ...request }, onReply);
  } catch (err) {
    if (err instanceof ControlUnavailable) return { outcome: failed('no_listener'), clamped };
    throw err;
  }
  conn.closed.then(() => settle(failed('listener_stopped')));
  const outcome = await ended;
  clearTimeout(timer);
  conn.close();
  return { outcome, clamped };
}

export async function notifyThroughListener(
  svcDir: string,
  request: { session: string; message: string; title?: string },
): Promise<{ delivered: boolean; code?: string; message?: string }> {
  let settle!: (r: { delivered: boolean; code?: string; message?: string }) => void;
  const done = new Promise<{ delivered: boolean; code?: string; message?: string }>((resolve) => {
    settle = resolve;
  });
  let conn: Awaited<ReturnType<typeof controlConnect>>;
  try {
    conn = await controlConnect(svcDir, { type: 'notify', ...request }, (reply) => {
      if (reply.type === 'notify.done') settle(reply);
      else if (reply.type === 'error')
        settle({ delivered: false, code: reply.error.code, message: reply.error.message });
    });
  } catch (err) {
    if (err instanceof ControlUnavailable) {
      return { delivered: false, code: 'no_listener', message: ASK_FAILURE_TEXT.no_listener };
    }
    throw err;
  }
  conn.closed.then(() =>
    settle({ delivered: false, code: 'listener_stopped', message: ASK_FAILURE_TEXT.listener_stopped }),
  );
  const result = await done;
  conn.close();
  return result;
}

export function createSvcMcpServer(opts: { svcDir: string; session: () => Promise<string> }): McpServer {
  const server = new McpServer({ name: 'svc', version: VERSION });
  server.registerTool(
    ASK_TOOL,
    { description: ASK_DESCRIPTION, inputSchema: askInput, outputSchema: askOutput },
    async ({ question, choices, timeout }) => {
      const session = await opts.session();
      const { outcome, clamped } = await askThroughListener(opts.svcDir, {
        session,
        question,
        choices: choices ?? [],
        ...(timeout === undefined ? {} : { timeoutSeconds: timeout }),
      });
      const text = askResultText(outcome, { clamped });
      const structured =
        outcome.state === 'answered'
          ? {
              status: outcome.state,
              answer: outcome.text,
              ...(outcome.choice !== null ? { choice: outcome.choice } : {}),
              ...(outcome.svcState ? { svcState: outcome.svcState } : {}),
            }
          : outcome.state === 'expired'
            ? { status: outcome.state, waitedSeconds: outcome.seconds }
            : { status: outcome.state, code: outcome.code };
      return {
        content: [{ type: 'text' as const, text }],
        structuredContent: structured,
        ...(outcome.state === 'failed' ? { isError: true } : {}),
      };
    },
  );
  server.registerTool(
    NOTIFY_TOOL,
    { description: NOTIFY_DESCRIPTION, inputSchema: notifyInput, outputSchema: notifyOutput },
    async ({ message, title }) => {
      const session = await opts.session();
      const result = await notifyThroughListener(opts.svcDir, { session, message, ...(title ? { title } : {}) });
      // kept in the phone's inbox, only not seen yet: said, not an error
      const kept = result.code === 'not_delivered';
      const text = result.delivered
        ? 'Notification sent to the phone.'
        : kept
          ? `No phone got the notification now (${result.message}); it waits in the app's inbox.`
          : `The notification was not sent: ${result.message ?? result.code} (${result.code}).`;
      return {
        content: [{ type: 'text' as const, text }],
        structuredContent: { delivered: result.delivered, ...(result.code ? { code: result.code } : {}) },
        ...(result.delivered || kept ? {} : { isError: true }),
      };
    },
  );
  return server;
}

/** Serve on stdin/stdout until the client goes away. */
export async function serveStdio(opts: { svcDir: string; session: () => Promise<string> }): Promise<void> {
  const server = createSvcMcpServer(opts);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close();
}
