/** A notification's tag for a session: a newer notification of that session replaces the older (zod-free, for sw.js). */
export const sessionTag = (computer: string, session: string) => `svc:${computer}:${session}`;
