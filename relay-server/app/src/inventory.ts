/**
 * The "Active Agents" list as the app draws it, from `GET /computers`: per computer, its sessions sorted so what
 * needs a person comes first, worktree sessions under their repository, subagents under their parent. Pure.
 */
import type { AgentState, SessionRecord } from '../../../core/protocol/index.js';
import { AGENT_STATE_TEXT } from '../../../core/protocol/refusalText.js';
import { activePane } from '../../../core/sessions/inventory.js';

export interface ComputerInfo {
  hookId: string;
  name: string;
  platform: string | null;
  online: boolean;
  lastSeenAt: number | null;
  sessions: SessionRecord[];
  sessionsAt: number | null;
  deviceId?: string | null;
  /** Its schedules, sealed by its listener (views/schedules.ts opens them); absent: none. */
  schedules?: Record<string, unknown>;
}

export interface SessionCard {
  kind: 'session';
  name: string;
  label: string;
  agent: string | null;
  state: AgentState;
  /** The state in words; for a shell session, what runs in it (`running npm`, `at the prompt`). */
  stateText: string;
  attached: boolean;
  shell: boolean;
  /** Subagents: view-only (no Send, no keys). */
  viewOnly: boolean;
  /** Sticky REMOTE (spec 4.13): the agent ends its answers with svc_ask for the phone. */
  remote: boolean;
  parent: string | null;
  children: SessionCard[];
}

export interface GroupCard {
  kind: 'group';
  /** The repository a set of worktree sessions belongs to. */
  name: string;
  sessions: SessionCard[];
}

export type ListItem = SessionCard | GroupCard;

export interface ComputerView {
  hookId: string;
  name: string;
  online: boolean;
  lastSeenAt: number | null;
  items: ListItem[];
  /** Sessions that ended, or were there before the computer restarted (core/sessions/control.ts), newest first. */
  past: { name: string; label: string; ended: number; resumable: boolean }[];
  /** How many sessions wait for an approval (for the heading). */
  attention: number;
}

/** Lower comes first: a person is needed, then busy agents, then the rest. */
const RANK: Record<AgentState, number> = { awaiting_approval: 0, working: 1, idle: 2, unknown: 3 };

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** Programs that are a shell waiting at its prompt (a login shell's name starts with `-`). */
const SHELLS = new Set([
  'bash',
  'zsh',
  'sh',
  'dash',
  'fish',
  'ksh',
  'mksh',
  'tcsh',
  'csh',
  'nu',
  'pwsh',
  'elvish',
  'xonsh',
]);

/**
 * A session's state in words. An agent's is what the listener read from its screen; a shell session has no such
 * state, so it says what runs in front in its active pane (the program's name only, as the inventory carries).
 */
export function stateText(s: SessionRecord): string {
  const state = s.state ?? 'unknown';
  if (state !== 'unknown' || s.shell !== true) return AGENT_STATE_TEXT[state];
  const program = activePane(s)?.command.replace(/^-/, '');
  if (!program) return AGENT_STATE_TEXT.unknown;
  return SHELLS.has(program) ? 'at the prompt' : `running ${program}`;
}

function card(s: SessionRecord): SessionCard {
  return {
    kind: 'session',
    name: s.name,
    label: s.label ?? s.name,
    agent: s.agent ?? null,
    state: s.state ?? 'unknown',
    stateText: stateText(s),
    attached: s.attached,
    shell: s.shell === true,
    viewOnly: s.parent !== undefined,
    remote: s.remote === true,
    parent: s.parent ?? null,
    children: [],
  };
}

/** The most urgent state among a card and its children. */
function urgency(c: SessionCard): number {
  return Math.min(RANK[c.state], ...c.children.map(urgency));
}

function bySense(a: SessionCard, b: SessionCard): number {
  return urgency(a) - urgency(b) || Number(a.shell) - Number(b.shell) || collator.compare(a.label, b.label);
}

function itemRank(item: ListItem): number {
  return item.kind === 'group' ? Math.min(...item.sessions.map(urgency)) : urgency(item);
}

function itemLabel(item: ListItem): string {
  return item.kind === 'group' ? item.name : item.label;
}

/** One computer's sessions as the list shows them. */
export function sessionItems(sessions: readonly SessionRecord[]): ListItem[] {
  const cards = new Map<string, SessionCard>();
  for (const s of sessions) cards.set(s.name, card(s));
  const top: SessionCard[] = [];
  const groups = new Map<string, SessionCard[]>();
  for (const s of sessions) {
    const c = cards.get(s.name)!;
    const parent = s.parent ? cards.get(s.parent) : undefined;
    if (parent) parent.children.push(c);
    else if (s.group) groups.set(s.group, [...(groups.get(s.group) ?? []), c]);
    else top.push(c);
  }
  for (const c of cards.values()) c.children.sort(bySense);
  const items: ListItem[] = [...top];
  for (const [name, members] of groups) items.push({ kind: 'group', name, sessions: members.sort(bySense) });
  // Same urgency: plain sessions before worktree groups, then by label.
  const kind = (item: ListItem) => (item.kind === 'group' ? 1 : 0);
  return items.sort(
    (a, b) => itemRank(a) - itemRank(b) || kind(a) - kind(b) || collator.compare(itemLabel(a), itemLabel(b)),
  );
}

/** Every computer, online ones first, then by name. */
export function computerViews(computers: readonly ComputerInfo[]): ComputerView[] {
  return [...computers]
    .sort((a, b) => Number(b.online) - Number(a.online) || collator.compare(a.name, b.name))
    .map((c) => ({
      hookId: c.hookId,
      name: c.name,
      online: c.online,
      lastSeenAt: c.lastSeenAt,
      items: sessionItems(c.sessions.filter((s) => s.ended === undefined)),
      past: c.sessions
        .filter((s) => s.ended !== undefined)
        .sort((a, b) => (b.ended ?? 0) - (a.ended ?? 0))
        .map((s) => ({
          name: s.name,
          label: s.meta?.project ?? s.name,
          ended: s.ended!,
          resumable: s.resumable === true,
        })),
      attention: c.sessions.filter((s) => s.state === 'awaiting_approval').length,
    }));
}

/** A session of a computer by name, with its card (for the session screen). */
export function findSession(computers: readonly ComputerInfo[], hookId: string, name: string) {
  const computer = computers.find((c) => c.hookId === hookId);
  const record = computer?.sessions.find((s) => s.name === name);
  return computer && record ? { computer, record, card: card(record) } : null;
}
