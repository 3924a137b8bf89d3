/** Machines log through a named action `log`, provided by the live wiring (actors/listener.ts). */
export interface LogParams {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}
