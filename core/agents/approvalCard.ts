/**
 * An approval prompt as the phones are shown it (core/protocol/bodies.ts ApprovalCardBody). Apart from
 * approvals.ts so the app, which reads prompts, does not load zod with them.
 */
import { ApprovalCardBody } from '../protocol/bodies.js';
import type { ApprovalPrompt } from './approvals.js';

/** The card the phones are shown for `prompt` (sealed as `approval`), its fields cut to the body's limits. */
export function approvalCardBody(session: string, prompt: ApprovalPrompt, at: number): ApprovalCardBody {
  const { agent, fingerprint, readable, tool, detail, question, choices, highlighted } = prompt;
  return ApprovalCardBody.parse({
    session,
    agent,
    fingerprint,
    readable,
    tool: tool.slice(0, 512),
    detail: detail.slice(0, 200).map((l) => l.slice(0, 2_000)),
    question: question.slice(0, 512),
    choices: choices.slice(0, 16).map((c) => ({ label: c.label.slice(0, 512), always: c.always })),
    highlighted,
    at,
  });
}
