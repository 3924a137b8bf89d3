/**
 * The real MCP SDK client running the compiled `svc mcp` over stdio, as an agent in tmux session `session` would
 * start it: with the test's HOME and the tmux pane's `TMUX` and `TMUX_PANE`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SVC_BIN } from './cli.js';
import type { TmuxServer } from './tmux.js';

export async function svcMcpClient(env: NodeJS.ProcessEnv, tmux: TmuxServer, session = 'svc-proj'): Promise<Client> {
  const pane = (await tmux.run(['display-message', '-p', '-t', `=${session}:`, '#{pane_id}'])).trim();
  const client = new Client({ name: 'svc-test', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SVC_BIN, 'mcp'],
      env: { ...(env as Record<string, string>), TMUX: `${tmux.socketPath},1,0`, TMUX_PANE: pane },
      stderr: 'pipe',
    }),
  );
  return client;
}
