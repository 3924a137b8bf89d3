/**
 * What the phone's "Active Agents" picker shows for each tmux session (spec 2.2, 4.14): which agent runs in it, its
 * picker label, its worktree group, whether it is a shell session, and its subagents as view-only children.
 * Pure: tmux's inventory (with the wrapper's `@svc-*` options) and the registry in, records out.
 */
import { type ApprovalPrompt, readApproval } from '../agents/approvals.js';
import type { AgentSpec } from '../agents/registry.js';
import { agentById, agentForPane, sessionNameFromTitle } from '../agents/registry.js';
import {
  type DebounceState,
  initialDebounce,
  nextAgentState,
  readScreen,
  SCREEN_RULES,
  screenHash,
} from '../agents/screens.js';
import { byCodeUnits } from '../order.js';
import type { PaneInfo, SessionRecord } from '../protocol/index.js';

/** The pane the agent runs in: the session's first pane (lowest window.pane index), which the wrapper made. */
export function mainPane(record: SessionRecord): PaneInfo | undefined {
  const order = (p: PaneInfo) => (p.index ?? '').split('.').map((n) => Number.parseInt(n, 10) || 0);
  return [...record.panes].sort((a, b) => {
    const [aw = 0, ap = 0] = order(a);
    const [bw = 0, bp = 0] = order(b);
    return aw - bw || ap - bp;
  })[0];
}

/** The agent of a session: what the wrapper recorded, else what is in front of its main pane. */
export function sessionAgent(record: SessionRecord): AgentSpec | undefined {
  if (record.meta?.agent) return agentById(record.meta.agent);
  const pane = mainPane(record);
  return pane ? agentForPane(pane) : undefined;
}

/**
 * The agent recorded by the wrapper is no longer in front (spec 7: e.g. A7 leaves only an interpreter):
 * the log line `no agent in pane (start=…, current=…)`, or null.
 */
export function missingAgent(record: SessionRecord): string | null {
  if (record.meta?.kind !== 'agent' || !record.meta.agent) return null;
  const pane = mainPane(record);
  if (!pane) return null;
  const seen = agentForPane(pane);
  if (seen && seen.id === record.meta.agent) return null;
  return `no agent in pane (start=${pane.startCommand ?? '?'}, current=${pane.command})`;
}

/** `svc-<repo>-wt-<slug>` → `{ repo, slug }` for a session the wrapper made for a worktree. */
export function worktreeParts(record: SessionRecord): { repo: string; slug: string } | null {
  if (!record.meta?.worktree) return null;
  const m = /^svc-(.+)-wt-(.+?)(?:-\d+)?$/.exec(record.name);
  return m ? { repo: m[1]!, slug: m[2]! } : null;
}

/**
 * Fill in agent, label, group, shell and subagents. Labels number the sessions of one project and agent in
 * creation order: `<project> · <Agent>`, `<project> · <Agent> #2`, `#3`.
 */
export function describeInventory(raw: readonly SessionRecord[], hostname: string): SessionRecord[] {
  const out: SessionRecord[] = [];
  const counts = new Map<string, number>();
  const ordered = [...raw].sort((a, b) => a.createdAt - b.createdAt || byCodeUnits(a.name, b.name));
  for (const record of ordered) {
    const agent = sessionAgent(record);
    const shell = record.meta?.kind === 'shell';
    const project = record.meta?.project ?? record.name.replace(/^svc-/, '');
    const described: SessionRecord = { ...record, shell };
    if (agent) described.agent = agent.name;

    const wt = worktreeParts(record);
    const title = agent ? (sessionNameFromTitle(agent, mainPane(record)?.title, hostname) ?? null) : null;
    if (shell) described.label = `${project} · Shell${record.meta?.label ? ` (${record.meta.label})` : ''}`;
    else if (!agent) described.label = record.name;
    else if (wt) {
      described.group = wt.repo;
      described.label = `${title ?? `wt-${wt.slug}`} · ${agent.name}`;
    } else if (title) described.label = `${title} · ${agent.name}`;
    else if (record.meta?.label) described.label = `${project} · ${agent.name} (${record.meta.label})`;
    else {
      const key = `${project}\u0000${agent.id}`;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      described.label = `${project} · ${agent.name}${n > 1 ? ` #${n}` : ''}`;
    }
    out.push(described);
    if (agent && !shell) out.push(...subagents(described, hostname));
  }
  return out;
}

/**
 * Subagents (spec 4.14): further panes of an agent session that run an agent themselves, as `<session>.<n>`
 * children, view-only. `n` counts from 1 in pane order.
 */
function subagents(parent: SessionRecord, hostname: string): SessionRecord[] {
  const main = mainPane(parent);
  const children: SessionRecord[] = [];
  for (const pane of parent.panes) {
    if (pane === main || pane.id === main?.id) continue;
    const agent = agentForPane(pane);
    if (!agent) continue;
    const n = children.length + 1;
    const title = sessionNameFromTitle(agent, pane.title, hostname) ?? null;
    children.push({
      name: `${parent.name}.${n}`,
      attached: parent.attached,
      createdAt: parent.createdAt,
      activityAt: parent.activityAt,
      panes: [{ ...pane, active: true }],
      agent: agent.name,
      label: `${title ?? `${parent.label} · subagent ${n}`}`,
      parent: parent.name,
      shell: false,
    });
  }
  return children;
}

/** The pane an inventory record's agent runs in (a subagent record has just its own pane). */
const agentPane = (record: SessionRecord): PaneInfo | undefined => mainPane(record);

/** Agent panes worth reading, with their session: those whose agent has trusted screen rules. */
export function agentPanes(described: readonly SessionRecord[]): { session: string; pane: string }[] {
  const found: { session: string; pane: string }[] = [];
  for (const record of described) {
    // a shell session too, while a known agent is in front of it: its dialogs are read like any agent's
    if (!record.agent) continue;
    const agent = record.parent ? agentForPane(agentPane(record)!) : sessionAgent(record);
    const pane = agentPane(record);
    if (agent && pane && SCREEN_RULES[agent.id]?.trusted) found.push({ session: record.name, pane: pane.id });
  }
  return found;
}

/** Panes worth reading (others stay `unknown` without a look). */
export function panesToRead(described: readonly SessionRecord[]): string[] {
  return agentPanes(described).map((p) => p.pane);
}

/**
 * Each agent's state from its pane (spec 3's "names of agent states": idle, working, awaiting_approval, unknown),
 * debounced per session: a new state counts once read on two polls in a row, idle once the screen is quiet.
 * `approvalOnScreen` names the sessions whose screen shows an approval prompt in this very reading, debounced or
 * not: the picker waits for a second reading, typing must not (text and an Enter could answer the prompt).
 * `unreadable` names the sessions whose agent has trusted screen rules but whose screen is missing from the reading
 * (the pane went away, or its screen could not be filed under its id): nothing may be typed into them as if idle.
 * `midTurn` names the sessions of an agent that may lose a message typed during its turn (`AgentSpec.typeAfterTurn`)
 * whose screen shows it working in this very reading, or whose debounced state still does (a turn that just ended:
 * the screen has not been quiet a moment yet, and that moment is the one to avoid): their pushes wait.
 */
export function applyScreens(
  described: readonly SessionRecord[],
  screens: Readonly<Record<string, string>>,
  debounce: Readonly<Record<string, DebounceState>>,
  now: number,
): {
  sessions: SessionRecord[];
  debounce: Record<string, DebounceState>;
  approvalOnScreen: string[];
  /** What each prompt of `approvalOnScreen` asks (core/agents/approvals.ts), by session. */
  approvals: Record<string, ApprovalPrompt>;
  unreadable: string[];
  midTurn: string[];
} {
  const next: Record<string, DebounceState> = {};
  const approvalOnScreen: string[] = [];
  const midTurn: string[] = [];
  const approvals: Record<string, ApprovalPrompt> = {};
  const unreadable: string[] = [];
  const sessions = described.map((record) => {
    if (!record.agent) return record;
    const agent = record.parent ? agentForPane(agentPane(record)!) : sessionAgent(record);
    const pane = agentPane(record);
    const text = pane ? screens[pane.id] : undefined;
    const rules = agent ? SCREEN_RULES[agent.id] : undefined;
    if (!pane || !rules?.trusted) return { ...record, state: 'unknown' as const };
    if (text === undefined) {
      unreadable.push(record.name);
      return { ...record, state: 'unknown' as const };
    }
    const reading = readScreen(rules, { text, title: pane.title });
    if (reading === 'awaiting_approval' && agent) {
      approvalOnScreen.push(record.name);
      const prompt = readApproval(agent.id, { text });
      if (prompt) approvals[record.name] = prompt;
    }
    const state = nextAgentState(debounce[record.name] ?? initialDebounce(now), reading, now, screenHash(text));
    next[record.name] = state;
    if (agent?.typeAfterTurn && (reading === 'working' || state.state === 'working')) midTurn.push(record.name);
    return { ...record, state: state.state };
  });
  return { sessions, debounce: next, approvalOnScreen, approvals, unreadable, midTurn };
}
