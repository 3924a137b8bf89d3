/**
 * A test-only switch that makes chosen listener children fail, so the supervision (core/supervision.ts) is tested on
 * the real listener: `SVC_FAULT`, read once when the listener starts.
 *
 *   SVC_FAULT=<where>:<actor id>[!][,...]
 *
 * `where` is `action` (the child's provided actions throw: a session's when it starts typing a push, an ask's when it
 * takes an answer to open), `promise` (the promises it invokes reject) or `callback` (the callback actors it runs
 * throw as they start). The actor id may end with `*` (a prefix: `session.svc-*`). Without `!` a fault fires once;
 * with it, every time.
 *
 * It is honoured only where the package's own tests are beside it (a source checkout): an installed package has no
 * `test/` and says it ignored the switch. The phone cannot set it: it is the listener process's environment.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AnyActorRef, type AnyStateMachine, fromCallback, fromPromise } from 'xstate';

export const FAULT_KINDS = ['action', 'promise', 'callback'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  kind: FaultKind;
  /** An actor id, or a prefix when it ended with `*`. */
  id: string;
  prefix: boolean;
  always: boolean;
}

/** The rules in `text`, or why it is not a valid switch. */
export function parseFaults(text: string): { rules: FaultRule[] } | { error: string } {
  const rules: FaultRule[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    if (!part) continue;
    const m = /^(action|promise|callback):([A-Za-z0-9._/*@-]+?)(!?)$/.exec(part);
    if (!m) return { error: `"${part}" is not <action|promise|callback>:<actor id>[!]` };
    const [, kind, id, bang] = m as unknown as [string, FaultKind, string, string];
    const prefix = id.endsWith('*');
    if (id.slice(0, -1).includes('*')) return { error: `"${part}": * only at the end of the actor id` };
    rules.push({ kind, id: prefix ? id.slice(0, -1) : id, prefix, always: bang === '!' });
  }
  return { rules };
}

export class InjectedFault extends Error {
  constructor(kind: FaultKind, actorId: string) {
    super(`SVC_FAULT: injected ${kind} failure in ${actorId}`);
    this.name = 'InjectedFault';
  }
}

/** Walks up from this file to the package's root (the folder with package.json). */
function packageRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  return null;
}

/** Whether this is a source checkout, where the switch is honoured: the package's tests are there. */
export function faultsAllowed(root = packageRoot()): boolean {
  return root !== null && existsSync(join(root, 'test', 'fakes', 'fakeModel.ts'));
}

type ActionImpl = (args: { self: AnyActorRef }, params: never) => unknown;
type LogicWithConfig = { config: (args: { self: AnyActorRef }) => unknown };

export interface Faults {
  /** The rules in force (empty when the switch is off or refused). */
  rules: FaultRule[];
  /** The same actions, each throwing when a child a rule names for `action` runs it. */
  actions<T extends Record<string, unknown>>(impls: T): T;
  /**
   * The same children (the logic the root spawns, by name): each machine's plain actions (those provided to it, not
   * xstate's own), and its own child machines', throw when a child a rule names for `action` runs them.
   */
  children<T extends Record<string, unknown>>(actors: T): T;
  /** The same promise logic (`fromPromise`), rejecting when invoked by a child a rule names for `promise`. */
  promise<T>(logic: T): T;
  /** The same callback logic (`fromCallback`), throwing as it starts for a child a rule names for `callback`. */
  callback<T>(logic: T): T;
}

const isMachine = (logic: unknown): logic is AnyStateMachine =>
  typeof logic === 'object' && logic !== null && 'implementations' in logic && 'provide' in logic;

/** The ids an actor answers to: its own and its parent's (a promise or callback invoked by a child machine). */
function idsOf(self: AnyActorRef): string[] {
  const parent = (self as unknown as { _parent?: AnyActorRef })._parent;
  return [self.id, ...(parent ? [parent.id] : [])];
}

export function createFaults(rules: FaultRule[]): Faults {
  const spent = new Set<FaultRule>();
  const hit = (kind: FaultKind, self: AnyActorRef): string | null => {
    for (const rule of rules) {
      if (rule.kind !== kind || spent.has(rule)) continue;
      const id = idsOf(self).find((i) => (rule.prefix ? i.startsWith(rule.id) : i === rule.id));
      if (id === undefined) continue;
      if (!rule.always) spent.add(rule);
      return id;
    }
    return null;
  };
  // the logic's `config` is the function it was made from: made again around it
  const wrapLogic = <T>(kind: FaultKind, logic: T): T => {
    if (!rules.some((r) => r.kind === kind)) return logic;
    const inner = (logic as unknown as LogicWithConfig).config;
    const check = (self: AnyActorRef) => {
      const id = hit(kind, self);
      if (id !== null) throw new InjectedFault(kind, id);
    };
    const made =
      kind === 'promise'
        ? fromPromise(async (args) => {
            check(args.self);
            return inner(args as never);
          })
        : fromCallback((args) => {
            check(args.self);
            return inner(args as never) as never;
          });
    return made as unknown as T;
  };
  return {
    rules,
    actions(impls) {
      if (!rules.some((r) => r.kind === 'action')) return impls;
      const out: Record<string, unknown> = {};
      for (const [name, impl] of Object.entries(impls)) {
        out[name] = (args: { self: AnyActorRef }, params: never) => {
          const id = hit('action', args.self);
          if (id !== null) throw new InjectedFault('action', id);
          return (impl as ActionImpl)(args, params);
        };
      }
      return out as typeof impls;
    },
    children(actors) {
      if (!rules.some((r) => r.kind === 'action')) return actors;
      const machine = (m: AnyStateMachine): AnyStateMachine => {
        // xstate's own actions (assign, enqueueActions, …) carry `resolve` and are left as they are
        const plain = Object.fromEntries(
          Object.entries(m.implementations.actions).filter(([, a]) => typeof a === 'function' && !('resolve' in a)),
        );
        const nested = Object.fromEntries(
          Object.entries(m.implementations.actors)
            .filter(([, logic]) => isMachine(logic))
            .map(([name, logic]) => [name, machine(logic as AnyStateMachine)]),
        );
        return m.provide({ actions: this.actions(plain), actors: nested });
      };
      return Object.fromEntries(
        Object.entries(actors).map(([name, logic]) => [name, isMachine(logic) ? machine(logic) : logic]),
      ) as typeof actors;
    },
    promise: (logic) => wrapLogic('promise', logic),
    callback: (logic) => wrapLogic('callback', logic),
  };
}

/** The switch as the listener reads it at start; `say` is told what was done with it. */
export function faultsFromEnv(
  env: NodeJS.ProcessEnv,
  say: (level: 'warn' | 'error', message: string) => void,
  allowed = faultsAllowed(),
): Faults {
  const text = env.SVC_FAULT?.trim();
  if (!text) return createFaults([]);
  if (!allowed) {
    say('error', 'SVC_FAULT ignored: it is a test switch, honoured only in a source checkout of svc');
    return createFaults([]);
  }
  const parsed = parseFaults(text);
  if ('error' in parsed) {
    say('error', `SVC_FAULT ignored: ${parsed.error}`);
    return createFaults([]);
  }
  say('warn', `SVC_FAULT: injecting failures (${text}); a test switch, never for real use`);
  return createFaults(parsed.rules);
}
