/**
 * What the phone may do to a session beyond typing (core/sessions/control.ts decides each; the sealed body is in
 * bodies.ts). Kept apart from the zod schemas: the web app's first load reads it without them.
 */
export const CONTROL_ACTIONS = ['end', 'kill', 'resume', 'forget'] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];
