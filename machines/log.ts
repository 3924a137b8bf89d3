import type { Failures } from '../core/supervision.js';

/** Machines log through a named action `log`, provided by the live wiring (actors/listener.ts). */
export interface LogParams {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}

/** A `log` action with its params: `enqueue(logLine('info', '…'))`. */
export const logLine = (level: LogParams['level'], message: string) =>
  ({ type: 'log', params: { level, message } }) as const;

/** The clock failures are timed by: a machine's `input.now` when a test gives one, else the wall clock. */
export const clockOf = (context: { input: { now?: () => number } }) => context.input.now?.() ?? Date.now();

/**
 * What every supervisor is started with (machines/asks.ts, devices.ts, scheduler.ts, sessions.ts, watches.ts,
 * worktrees.ts): the clock failures are timed by (Date.now when absent), and the records of its children's failures
 * that the supervisor it replaces kept, so a restart neither forgets a backoff nor brings back a child given up.
 */
export interface SupervisorInput {
  now?: () => number;
  failures?: Record<string, Failures>;
}
