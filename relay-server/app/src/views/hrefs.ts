/** The app's hash routes, made in one place (main.ts reads them): views link to each other through these. */

/** The New session screen of computer `hookId` (views/newSession.ts). */
export const newSessionHref = (hookId: string) => `#/new/${encodeURIComponent(hookId)}`;

/** A session's screen (views/session.ts). */
export function sessionHref(hookId: string, name: string): string {
  return `#/s/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}`;
}
