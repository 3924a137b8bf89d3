/**
 * `svc mcp` (spec 4.5): the MCP server an agent starts on stdio, with `svc_ask` and `svc_notify` (docs/mcp.md).
 * Wire it into an agent as command `svc`, args `["mcp"]`.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { serveStdio } from '../../actors/mcp/server.js';
import { servedSession } from '../../actors/mcp/session.js';
import { svcPaths } from '../../core/daemon/paths.js';

export default defineCommand({
  meta: { name: 'mcp', description: 'MCP server on stdio for agents: svc_ask and svc_notify reach your phone' },
  async run() {
    let session: Promise<string> | null = null;
    await serveStdio({
      svcDir: svcPaths(homedir()).dir,
      // Asked once, when the first tool is called: the pane's session does not change under a running agent.
      session: () => {
        session ??= servedSession(process.env, process.cwd()).then((s) => s.name);
        return session;
      },
    });
  },
});
