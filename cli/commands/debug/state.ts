/** `svc debug state [--json]`: the running listener's actors, each with its machine, state and a short summary. */
import { defineCommand } from 'citty';
import { controlRequest } from '../../../actors/daemon/controlSocket.js';
import { actorRows, formatStateValue, formatSummary } from '../../../core/daemon/control.js';
import { formatFailingLines } from '../../../core/supervision.js';
import { failControl, svcDir } from './_shared.js';

export default defineCommand({
  meta: { name: 'state', description: "Print the running listener's live actor tree" },
  args: { json: { type: 'boolean', description: 'One JSON object: { actors: [...], failing: [...] }' } },
  async run({ args }) {
    try {
      const { actors, failing = [] } = await controlRequest(svcDir(), { type: 'state' }, 'state');
      const rows = actorRows(actors);
      if (args.json) {
        const out = rows.map(({ actor }) => ({
          ...actor,
          state: actor.machine ? formatStateValue(actor.value) : null,
        }));
        process.stdout.write(`${JSON.stringify({ actors: out, failing })}\n`);
        return;
      }
      const names = rows.map((r) => `${r.prefix}${r.actor.id}`);
      const width = Math.max(0, ...names.map((n) => [...n].length)) + 2;
      const machineWidth = Math.max(0, ...rows.map((r) => (r.actor.machine ?? '(logic)').length)) + 2;
      rows.forEach(({ actor }, i) => {
        const name = names[i]!;
        const machine = actor.machine ?? '(logic)';
        const state = actor.machine ? formatStateValue(actor.value) : '';
        const summary = formatSummary(actor.summary);
        const line = `${name}${' '.repeat(width - [...name].length)}${machine.padEnd(machineWidth)}${state}`;
        process.stdout.write(`${(summary ? `${line}  ${summary}` : line).trimEnd()}\n`);
      });
      // children that failed (core/supervision.ts): restarted, or given up and absent from the tree above
      if (failing.length > 0) process.stdout.write(`failed children:\n${formatFailingLines(failing).join('\n')}\n`);
    } catch (err) {
      failControl(err);
    }
  },
});
