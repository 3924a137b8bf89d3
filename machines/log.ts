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
