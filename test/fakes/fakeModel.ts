/**
 * A fake model API on loopback, for driving the REAL agent CLIs (Claude Code, Codex, Gemini CLI, pi, opencode, …)
 * through their idle, working and awaiting-approval screens without a network (test/fixtures/screens/README.md).
 * Plain node:http, no dependencies. It speaks just enough of:
 *
 * - Anthropic Messages (`POST …/v1/messages`, streaming SSE or JSON; `…/count_tokens`) — Claude Code via
 *   `ANTHROPIC_BASE_URL`, pi via a custom provider;
 * - OpenAI Responses (`POST …/responses`, SSE) and Chat Completions (`POST …/chat/completions`, SSE or JSON) —
 *   Codex via a `model_providers` entry, opencode and others via an OpenAI-compatible base URL;
 * - Gemini (`POST …/models/<m>:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens`) — Gemini CLI via
 *   `GOOGLE_GEMINI_BASE_URL`.
 *
 * What it answers is scripted by the last user turn (see `pickScript`):
 * - a turn whose last item is a tool result → the short text `Done.` (the agent goes back to idle);
 * - the agent's own request for a next-prompt suggestion (`[SUGGESTION MODE: …`, Qwen Code after its second reply)
 *   → the short suggestion `run the tests`, which the agent shows in its empty input line;
 * - a prompt containing `svc-slow` → a text reply streamed one word per `slowChunkMs` for `slowMs` (working);
 * - a prompt containing `svc-wait` → a reply that stays silent (empty deltas) for `slowMs`, then one line: the
 *   "thinking" phase of a real model, when agents show their busy status line (working);
 * - a prompt containing `svc-approve` → a call of the agent's own shell tool (chosen from the request's tool list by
 *   name, arguments shaped by its JSON schema) running `touch svc-approval-probe.txt`, which agents ask to approve,
 *   sent after `toolDelayMs` (0 by default: a model that asks at once);
 * - a prompt containing `svc-danger` → the shell tool running DANGER_COMMAND (`rm -rf`, which pi's permission
 *   gate asks about);
 * - a prompt containing `svc-long` → the same shell tool running LONG_COMMAND, which wraps on a 200-column pane;
 * - a prompt containing `svc-edit <absolute path>` → the agent's file-reading tool on that file, then (once its result
 *   is back) its edit tool replacing EDIT_OLD with EDIT_NEW there: the agents ask to approve the edit with a diff
 *   (Codex, over Responses: its shell tool running `apply_patch`, which it takes as an edit and asks about as one);
 * - a prompt containing `svc-ask` → a call of svc's MCP tool `svc_ask` (`mcp__svc__svc_ask` in Claude Code) with
 *   ASK_INPUT, when the agent offers it (docs/mcp.md); its result then gets `Done.` like any tool result;
 * - anything else → a one-line text reply (idle).
 * Requests that ask for JSON (`responseMimeType: application/json`, Gemini's side checks) get a small JSON object.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const PLAIN_REPLY = 'Hello from the fake model. Nothing to do.';
export const DONE_REPLY = 'Done.';
export const APPROVAL_COMMAND = 'touch svc-approval-probe.txt';
/** The file APPROVAL_COMMAND makes in the agent's project: there only if the command was approved. */
export const APPROVAL_PROBE = 'svc-approval-probe.txt';
/** The `svc-long` command: longer than a 200-column pane is wide, so the dialog wraps it. */
export const LONG_COMMAND = `echo svc-long-approval-probe-${'0123456789'.repeat(22)} > svc-approval-probe.txt`;
/**
 * The `svc-danger` command: what pi's example permission gate (`examples/extensions/permission-gate.ts`) asks
 * about (`rm -rf`); it removes a folder made for it, so the folder is gone only if the command was approved.
 */
export const DANGER_PROBE = 'svc-danger-probe';
export const DANGER_COMMAND = `rm -rf ${DANGER_PROBE}`;
/** The `svc-edit` script replaces this line of the named file with EDIT_NEW. */
export const EDIT_OLD = 'beta line';
export const EDIT_NEW = 'beta line, changed by svc';
/** What a next-prompt suggestion request gets: short enough that agents filtering suggestions keep it. */
export const SUGGESTION_REPLY = 'run the tests';

export type ScriptKind =
  | 'text'
  | 'slow'
  | 'wait'
  | 'tool'
  | 'long'
  | 'danger'
  | 'edit'
  | 'ask'
  | 'done'
  | 'json'
  | 'suggest';

/** What the `svc-ask` script asks through svc's MCP tool. */
export const ASK_INPUT = { question: 'Deploy to staging now?', choices: ['Yes, deploy', 'Not yet'], timeout: 120 };
/** svc's ask tool as agents name it: `mcp__<server>__<tool>` (Claude Code), or the bare name. */
const ASK_TOOL = /^(mcp__svc__)?svc_ask$/;

/** What a structured-output request (Claude Code's session title, Gemini's side checks) gets for a string field. */
export const JSON_TITLE = 'Svc fixture session';

export interface FakeModelOptions {
  /** How long a `svc-slow` reply streams. Default 120 s. */
  slowMs?: number;
  /** Gap between two streamed words of a slow reply. Default 500 ms. */
  slowChunkMs?: number;
  /** Port to listen on (127.0.0.1). Default 0 (any free port). */
  port?: number;
  /** How long a tool call waits before it is sent (a model that asks at once: 0). Default 0. */
  toolDelayMs?: number;
}

export interface LoggedRequest {
  method: string;
  url: string;
  api: 'anthropic' | 'responses' | 'chat' | 'gemini' | 'other';
  script?: ScriptKind;
  /** The tool the fake chose to call, if any. */
  tool?: string;
  body?: unknown;
}

export interface FakeModel {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  requests: LoggedRequest[];
  /** From now on, answer tool calls after `ms`. */
  setToolDelayMs(ms: number): void;
  /** From now on, stream the `svc-slow` and `svc-wait` replies over `ms`. */
  setSlowMs(ms: number): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** All text of a message content in any of the four shapes (string, parts with text, Gemini parts); tool results
 * (whose output may echo anything) are left out. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(textOf).join('\n');
  if (isObj(content)) {
    if (content.type === 'tool_result' || 'functionResponse' in content) return '';
    if (typeof content.text === 'string') return content.text;
    if ('content' in content) return textOf(content.content);
    if ('parts' in content) return textOf(content.parts);
  }
  return '';
}

/** The text of every user turn of a request (Messages, Chat Completions, Responses or Gemini), oldest first; tool
 * results and turns with no text are left out. */
export function userTexts(body: unknown): string[] {
  if (!isObj(body)) return [];
  const turns = [body.messages, body.input, body.contents].find(Array.isArray) ?? [];
  return (turns as unknown[])
    .filter((t): t is Json => isObj(t) && t.role === 'user')
    .map((t) => textOf('parts' in t ? t.parts : t.content))
    .filter((t) => t !== '');
}

/** Every string anywhere in `value`. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (isObj(value)) return Object.values(value).flatMap(stringsIn);
  return [];
}

/**
 * Whether a user turn of the request carries `text` anywhere, tool results included: Claude Code sends a message
 * typed while a tool ran with that tool's result (a queued command), where `userTexts` does not look.
 */
export function userTurnsHold(body: unknown, text: string): boolean {
  if (!isObj(body)) return false;
  const turns = [body.messages, body.input, body.contents].find(Array.isArray) ?? [];
  return (turns as unknown[])
    .filter((t): t is Json => isObj(t) && t.role === 'user')
    .some((t) => stringsIn(t).some((s) => s.includes(text)));
}

/** Where `text` stands in a request body, as paths (`.messages.3.content.0.text`). */
function pathsTo(value: unknown, text: string, at = ''): string[] {
  if (typeof value === 'string') return value.includes(text) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => pathsTo(v, text, `${at}.${i}`));
  if (isObj(value)) return Object.entries(value).flatMap(([k, v]) => pathsTo(v, text, `${at}.${k}`));
  return [];
}

/** For a test's failure message: each of the last requests, what it was answered with, where `text` stands in it,
 * and its last turns. */
export function describeRequests(requests: readonly LoggedRequest[], text: string, last = 6): string {
  return requests
    .slice(-last)
    .map((r) => {
      const turns = isObj(r.body) ? ([r.body.messages, r.body.input, r.body.contents].find(Array.isArray) ?? []) : [];
      const tail = (turns as unknown[])
        .slice(-3)
        .map((t) => (isObj(t) ? `${String(t.role)}: ${JSON.stringify(t.content ?? t.parts).slice(0, 400)}` : '?'));
      return `${r.method} ${r.url} (${r.script}) '${text}' at [${pathsTo(r.body, text).join(' ')}]\n  ${tail.join('\n  ')}`;
    })
    .join('\n');
}

const hasToolResult = (content: unknown): boolean =>
  Array.isArray(content) &&
  content.some((p) => isObj(p) && (p.type === 'tool_result' || p.type === 'toolResult' || 'functionResponse' in p));

/** The script for a request, from its last turn. */
export function pickScript(lastUserText: string, lastIsToolResult: boolean): ScriptKind {
  // The agent asking what the user might type next: never a tool call, whatever the keywords of the conversation.
  if (lastUserText.includes('[SUGGESTION MODE')) return 'suggest';
  // A keyword wins over a tool result: Claude Code sends a prompt typed after an interrupted tool call together
  // with that call's result, in one message.
  if (lastUserText.includes('svc-approve')) return 'tool';
  if (lastUserText.includes('svc-long')) return 'long';
  if (lastUserText.includes('svc-danger')) return 'danger';
  if (lastUserText.includes('svc-ask')) return 'ask';
  if (lastUserText.includes('svc-slow')) return 'slow';
  if (lastUserText.includes('svc-wait')) return 'wait';
  if (lastIsToolResult) return 'done';
  return 'text';
}

interface ToolDef {
  name: string;
  schema: Json;
}

const SHELL_TOOL = /^(bash|shell|shell_command|exec_command|run_shell_command|execute_command|run_command|terminal)$/i;
const SHELL_TOOL_LOOSE = /bash|shell|exec|command|terminal/i;

/** The agent's shell tool among the tools it offered. */
export function pickShellTool(tools: readonly ToolDef[]): ToolDef | undefined {
  return tools.find((t) => SHELL_TOOL.test(t.name)) ?? tools.find((t) => SHELL_TOOL_LOOSE.test(t.name));
}

const READ_TOOL = /^(Read|read|read_file)$/;
const EDIT_TOOL = /^(Edit|edit|replace|str_replace_based_edit_tool|edit_file)$/;

/**
 * The `svc-edit` script's next call, from the prompt and the tools called since it: the file-reading tool first
 * (Claude Code and opencode refuse to edit a file not read in the session), then the edit tool; none once the edit
 * was made (the agent gets a text reply).
 */
export function editCall(prompt: string, called: readonly string[], tools: readonly ToolDef[]) {
  const path = /svc-edit\s+(\S+)/.exec(prompt)?.[1];
  if (!path) return undefined;
  const read = tools.find((t) => READ_TOOL.test(t.name));
  const edit = tools.find((t) => EDIT_TOOL.test(t.name));
  if (!edit || called.some((n) => EDIT_TOOL.test(n))) return undefined;
  const props = (t: ToolDef) => (isObj(t.schema.properties) ? Object.keys(t.schema.properties) : []);
  const pathKey = (t: ToolDef) =>
    ['file_path', 'filePath', 'absolute_path', 'path'].find((k) => props(t).includes(k)) ?? 'file_path';
  if (read && !called.some((n) => READ_TOOL.test(n))) return { tool: read, args: { [pathKey(read)]: path } as Json };
  const args: Json = { [pathKey(edit)]: path };
  const has = (k: string) => props(edit).includes(k);
  args[has('oldString') ? 'oldString' : 'old_string'] = EDIT_OLD;
  args[has('newString') ? 'newString' : 'new_string'] = EDIT_NEW;
  if (has('instruction')) args.instruction = 'Change the beta line';
  return { tool: edit, args };
}

/** The command a shell-tool script runs. */
const commandFor = (script: ScriptKind) =>
  script === 'long' ? LONG_COMMAND : script === 'danger' ? DANGER_COMMAND : APPROVAL_COMMAND;

/** The `svc-edit` script as Codex's `apply_patch` command: EDIT_OLD becomes EDIT_NEW in the file at `path`. */
export const applyPatchCommand = (path: string): string =>
  [
    "apply_patch <<'PATCH'",
    '*** Begin Patch',
    `*** Update File: ${path}`,
    '@@',
    ` alpha line`,
    `-${EDIT_OLD}`,
    `+${EDIT_NEW}`,
    '*** End Patch',
    'PATCH',
  ].join('\n');

/** Arguments for a shell tool, shaped by its JSON schema (command as string or argv, `cmd`, a description). */
export function shellArguments(schema: Json, command = APPROVAL_COMMAND): Json {
  const props = isObj(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const args: Json = {};
  const key = ['command', 'cmd', 'script', 'commandLine'].find((k) => k in props) ?? 'command';
  const prop = props[key];
  args[key] = isObj(prop) && prop.type === 'array' ? ['bash', '-lc', command] : command;
  for (const name of Object.keys(props)) {
    if (name in args) continue;
    const p = props[name];
    const type = isObj(p) ? p.type : undefined;
    if (name === 'description' || name === 'explanation' || name === 'justification' || name === 'reason')
      args[name] = 'Create a probe file';
    else if (name === 'is_background' || name === 'isBackground' || name === 'run_in_background') args[name] = false;
    // Codex runs a command in its sandbox without asking unless the call asks to leave it.
    else if (name === 'sandbox_permissions') args[name] = 'require_escalated';
    else if (name === 'requires_approval' || name === 'requiresApproval') args[name] = true;
    else if (required.includes(name)) {
      if (type === 'string') args[name] = name === 'workdir' || name === 'cwd' || name === 'directory' ? '.' : '';
      else if (type === 'boolean') args[name] = false;
      else if (type === 'number' || type === 'integer') args[name] = 60;
    }
  }
  return args;
}

/** A small value that satisfies a JSON schema (strings are `JSON_TITLE`, enums take their first value). */
export function jsonForSchema(schema: unknown): unknown {
  if (!isObj(schema)) return JSON_TITLE;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const props = isObj(schema.properties) ? schema.properties : {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, jsonForSchema(v)]));
    }
    case 'array':
      return [];
    case 'boolean':
      return false;
    case 'number':
    case 'integer':
      return 1;
    default:
      return JSON_TITLE;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

const sse = (res: ServerResponse, data: unknown, event?: string): void => {
  if (res.destroyed) return;
  res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
};

/** The words of a reply, streamed one by one (slow) or in one go. */
function slowWords(
  opts: Required<Omit<FakeModelOptions, 'port'>>,
  script: ScriptKind,
): { words: string[]; gapMs: number } {
  const count = Math.max(1, Math.floor(opts.slowMs / opts.slowChunkMs));
  const words =
    script === 'wait'
      ? [...Array.from({ length: count }, () => ''), 'Finished waiting.']
      : Array.from({ length: count }, (_, i) => `word${i + 1} `);
  return { words, gapMs: opts.slowChunkMs };
}

/** A tool call is sent after `toolDelayMs` (from the request's arrival, as a model's time to answer). */
const delayTool = (opts: Required<Omit<FakeModelOptions, 'port'>>) =>
  opts.toolDelayMs > 0 ? sleep(opts.toolDelayMs) : Promise.resolve();

/** The one-piece text reply of a script that is not streamed word by word and calls no tool. */
const replyText = (script: ScriptKind): string =>
  script === 'done' ? DONE_REPLY : script === 'suggest' ? SUGGESTION_REPLY : PLAIN_REPLY;

/** Stream `words` through `emit` with gaps; stops early when the client goes away. */
async function streamWords(res: ServerResponse, words: readonly string[], gapMs: number, emit: (w: string) => void) {
  for (const w of words) {
    if (res.destroyed) return;
    emit(w);
    if (gapMs > 0) await sleep(gapMs);
  }
}

let seq = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++seq).toString(36)}`;

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages

async function anthropic(
  body: Json,
  res: ServerResponse,
  opts: Required<Omit<FakeModelOptions, 'port'>>,
  log: LoggedRequest,
) {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  // The user's turn may be several messages (Claude Code sends the first prompt, then a message of its own notes).
  const lastReply = messages.findLastIndex((m) => m.role === 'assistant');
  const turn = messages.slice(lastReply + 1).map((m) => m.content);
  const format = isObj(body.output_config) && isObj(body.output_config.format) ? body.output_config.format : {};
  const schema = format.type === 'json_schema' ? format.schema : undefined;
  const tools = (Array.isArray(body.tools) ? (body.tools as Json[]) : []).map((t) => ({
    name: String(t.name ?? ''),
    schema: isObj(t.input_schema) ? t.input_schema : {},
  }));
  // The `svc-edit` script spans turns (read, then edit): judged from the prompt and the calls made since it.
  const promptAt = messages.findLastIndex((m) => m.role === 'user' && textOf(m.content) !== '');
  const called = messages
    .slice(promptAt + 1)
    .flatMap((m) => (m.role === 'assistant' && Array.isArray(m.content) ? (m.content as Json[]) : []))
    .filter((c) => c.type === 'tool_use')
    .map((c) => String(c.name));
  const edit = schema ? undefined : editCall(textOf(messages[promptAt]?.content), called, tools);
  const script: ScriptKind = schema
    ? 'json'
    : edit
      ? 'edit'
      : pickScript(turn.map(textOf).join('\n'), turn.some(hasToolResult));
  const tool =
    script === 'tool' || script === 'long' || script === 'danger'
      ? pickShellTool(tools)
      : script === 'ask'
        ? tools.find((t) => ASK_TOOL.test(t.name))
        : edit?.tool;
  const input = (t: ToolDef) =>
    script === 'ask' ? ASK_INPUT : edit ? edit.args : shellArguments(t.schema, commandFor(script));
  if (tool && script !== 'ask') await delayTool(opts);
  log.script = script;
  if (tool) log.tool = tool.name;
  const model = typeof body.model === 'string' ? body.model : 'claude-fake';
  const id = nextId('msg');
  const usage = { input_tokens: 12, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const text = script === 'json' ? JSON.stringify(jsonForSchema(schema)) : replyText(script);

  if (body.stream !== true) {
    const content = tool
      ? [{ type: 'tool_use', id: nextId('toolu'), name: tool.name, input: input(tool) }]
      : [{ type: 'text', text }];
    sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: tool ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage,
    });
    return;
  }
  startSse(res);
  const ev = (type: string, data: Json) => sse(res, { type, ...data }, type);
  ev('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  if (tool) {
    ev('content_block_start', {
      index: 0,
      content_block: { type: 'tool_use', id: nextId('toolu'), name: tool.name, input: {} },
    });
    ev('content_block_delta', {
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(input(tool)) },
    });
  } else {
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    if (script === 'slow' || script === 'wait') {
      const { words, gapMs } = slowWords(opts, script);
      await streamWords(res, words, gapMs, (w) =>
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } }),
      );
    } else ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
  }
  ev('content_block_stop', { index: 0 });
  ev('message_delta', {
    delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: 8 },
  });
  ev('message_stop', {});
  res.end();
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses

function responsesTools(body: Json): ToolDef[] {
  return (Array.isArray(body.tools) ? (body.tools as Json[]) : []).flatMap((t) => {
    if (t.type === 'function' && typeof t.name === 'string')
      return [{ name: t.name, schema: isObj(t.parameters) ? t.parameters : {} }];
    if (t.type === 'local_shell') return [{ name: 'local_shell', schema: {} }];
    return [];
  });
}

async function responses(
  body: Json,
  res: ServerResponse,
  opts: Required<Omit<FakeModelOptions, 'port'>>,
  log: LoggedRequest,
) {
  const input = Array.isArray(body.input) ? (body.input as Json[]) : [];
  const last = input[input.length - 1];
  const lastIsTool = isObj(last) && typeof last.type === 'string' && /_call_output$/.test(last.type);
  const lastUser = [...input].reverse().find((i) => isObj(i) && i.role === 'user');
  const format = isObj(body.text) && isObj(body.text.format) ? body.text.format : {};
  const schema = format.type === 'json_schema' ? format.schema : undefined;
  const prompt = lastIsTool ? '' : textOf(lastUser?.content);
  // Codex edits with `apply_patch`, which it also takes as a shell command (and asks about as an edit)
  const patchPath = schema ? undefined : /svc-edit\s+(\S+)/.exec(prompt)?.[1];
  const script: ScriptKind = schema ? 'json' : patchPath ? 'edit' : pickScript(prompt, lastIsTool);
  const tool =
    script === 'tool' || script === 'long' || script === 'danger' || script === 'edit'
      ? pickShellTool(responsesTools(body))
      : undefined;
  const command = patchPath ? applyPatchCommand(patchPath) : commandFor(script);
  if (tool) await delayTool(opts);
  log.script = script;
  if (tool) log.tool = tool.name;
  const respId = nextId('resp');
  const model = typeof body.model === 'string' ? body.model : 'gpt-fake';
  const usage = {
    input_tokens: 12,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 8,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 20,
  };
  const response = (status: string, output: unknown[]) => ({
    id: respId,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output,
    usage: status === 'completed' ? usage : null,
  });
  let n = 0;
  const ev = (type: string, data: Json) => sse(res, { type, sequence_number: n++, ...data }, type);
  startSse(res);
  ev('response.created', { response: response('in_progress', []) });
  ev('response.in_progress', { response: response('in_progress', []) });
  let item: Json;
  if (tool) {
    const callId = nextId('call');
    item =
      tool.name === 'local_shell'
        ? {
            type: 'local_shell_call',
            id: nextId('lsh'),
            call_id: callId,
            status: 'completed',
            action: { type: 'exec', command: ['bash', '-lc', command], env: {} },
          }
        : {
            type: 'function_call',
            id: nextId('fc'),
            call_id: callId,
            name: tool.name,
            arguments: JSON.stringify(shellArguments(tool.schema, command)),
            status: 'completed',
          };
    ev('response.output_item.added', { output_index: 0, item });
    ev('response.output_item.done', { output_index: 0, item });
  } else {
    const msgId = nextId('msg');
    ev('response.output_item.added', {
      output_index: 0,
      item: { type: 'message', id: msgId, role: 'assistant', status: 'in_progress', content: [] },
    });
    ev('response.content_part.added', {
      item_id: msgId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    let text = '';
    const delta = (w: string) => {
      text += w;
      ev('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: w });
    };
    if (script === 'slow' || script === 'wait') {
      const { words, gapMs } = slowWords(opts, script);
      await streamWords(res, words, gapMs, delta);
    } else delta(script === 'json' ? JSON.stringify(jsonForSchema(schema)) : replyText(script));
    ev('response.output_text.done', { item_id: msgId, output_index: 0, content_index: 0, text });
    const part = { type: 'output_text', text, annotations: [] };
    ev('response.content_part.done', { item_id: msgId, output_index: 0, content_index: 0, part });
    item = { type: 'message', id: msgId, role: 'assistant', status: 'completed', content: [part] };
    ev('response.output_item.done', { output_index: 0, item });
  }
  ev('response.completed', { response: response('completed', [item]) });
  res.end();
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions

async function chat(
  body: Json,
  res: ServerResponse,
  opts: Required<Omit<FakeModelOptions, 'port'>>,
  log: LoggedRequest,
) {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const last = messages[messages.length - 1];
  const lastIsTool = last?.role === 'tool';
  const script = pickScript(lastIsTool ? '' : textOf(last?.content), lastIsTool);
  const tools = (Array.isArray(body.tools) ? (body.tools as Json[]) : []).flatMap((t) =>
    isObj(t.function) && typeof t.function.name === 'string'
      ? [{ name: t.function.name, schema: isObj(t.function.parameters) ? t.function.parameters : {} }]
      : [],
  );
  const tool = script === 'tool' || script === 'long' || script === 'danger' ? pickShellTool(tools) : undefined;
  if (tool) await delayTool(opts);
  log.script = script;
  if (tool) log.tool = tool.name;
  const id = nextId('chatcmpl');
  const model = typeof body.model === 'string' ? body.model : 'gpt-fake';
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 };
  const toolCall = tool && {
    index: 0,
    id: nextId('call'),
    type: 'function',
    function: { name: tool.name, arguments: JSON.stringify(shellArguments(tool.schema, commandFor(script))) },
  };
  const text = replyText(script);
  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: toolCall
            ? { role: 'assistant', content: null, tool_calls: [toolCall] }
            : { role: 'assistant', content: text },
          finish_reason: toolCall ? 'tool_calls' : 'stop',
        },
      ],
      usage,
    });
    return;
  }
  startSse(res);
  const chunk = (delta: Json, finish: string | null, withUsage = false) =>
    sse(res, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(withUsage ? { usage } : {}),
    });
  chunk({ role: 'assistant', content: '' }, null);
  if (toolCall) chunk({ tool_calls: [toolCall] }, null);
  else if (script === 'slow' || script === 'wait') {
    const { words, gapMs } = slowWords(opts, script);
    await streamWords(res, words, gapMs, (w) => chunk({ content: w }, null));
  } else chunk({ content: text }, null);
  chunk({}, toolCall ? 'tool_calls' : 'stop', true);
  sse(res, '[DONE]');
  res.end();
}

// ---------------------------------------------------------------------------------------------------------------
// Gemini

async function gemini(
  body: Json,
  res: ServerResponse,
  stream: boolean,
  opts: Required<Omit<FakeModelOptions, 'port'>>,
  log: LoggedRequest,
) {
  const contents = Array.isArray(body.contents) ? (body.contents as Json[]) : [];
  const last = contents[contents.length - 1];
  const config = isObj(body.generationConfig) ? body.generationConfig : {};
  const wantsJson = config.responseMimeType === 'application/json';
  const tools = (Array.isArray(body.tools) ? (body.tools as Json[]) : []).flatMap((t) =>
    (Array.isArray(t.functionDeclarations) ? (t.functionDeclarations as Json[]) : []).map((f) => ({
      name: String(f.name ?? ''),
      schema: isObj(f.parameters) ? f.parameters : isObj(f.parametersJsonSchema) ? f.parametersJsonSchema : {},
    })),
  );
  const promptAt = contents.findLastIndex((c) => c.role === 'user' && textOf(c.parts) !== '');
  const called = contents
    .slice(promptAt + 1)
    .flatMap((c) => (c.role === 'model' && Array.isArray(c.parts) ? (c.parts as Json[]) : []))
    .flatMap((p) => (isObj(p.functionCall) ? [String(p.functionCall.name)] : []));
  const edit = wantsJson ? undefined : editCall(textOf(contents[promptAt]?.parts), called, tools);
  const script: ScriptKind = wantsJson
    ? 'json'
    : edit
      ? 'edit'
      : pickScript(textOf(last?.parts), hasToolResult(last?.parts));
  const tool = script === 'tool' || script === 'long' || script === 'danger' ? pickShellTool(tools) : edit?.tool;
  if (tool) await delayTool(opts);
  log.script = script;
  if (tool) log.tool = tool.name;
  const usageMetadata = { promptTokenCount: 12, candidatesTokenCount: 8, totalTokenCount: 20 };
  const candidate = (parts: Json[], finish?: string) => ({
    candidates: [{ content: { role: 'model', parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
    usageMetadata,
    modelVersion: 'gemini-fake',
  });
  const json = JSON.stringify({
    reasoning: 'fake model',
    next_speaker: 'user',
    model_choice: 'flash',
    complexity_reasoning: 'simple',
    complexity_score: 1,
  });
  const parts: Json[] = tool
    ? [{ functionCall: { name: tool.name, args: edit ? edit.args : shellArguments(tool.schema, commandFor(script)) } }]
    : [{ text: script === 'json' ? json : replyText(script) }];
  if (!stream) {
    sendJson(res, 200, candidate(parts, 'STOP'));
    return;
  }
  startSse(res);
  if (script === 'slow' || script === 'wait') {
    const { words, gapMs } = slowWords(opts, script);
    await streamWords(res, words, gapMs, (w) => sse(res, candidate([{ text: w }])));
    sse(res, candidate([{ text: '' }], 'STOP'));
  } else sse(res, candidate(parts, 'STOP'));
  res.end();
}

// ---------------------------------------------------------------------------------------------------------------

export async function startFakeModel(options: FakeModelOptions = {}): Promise<FakeModel> {
  const opts = {
    slowMs: options.slowMs ?? 120_000,
    slowChunkMs: options.slowChunkMs ?? 500,
    toolDelayMs: options.toolDelayMs ?? 0,
  };
  const requests: LoggedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { type: 'fake_error', message: String(e) } });
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const raw = method === 'POST' || method === 'PUT' ? await readBody(req) : '';
    let body: Json = {};
    try {
      const parsed: unknown = raw ? JSON.parse(raw) : {};
      if (isObj(parsed)) body = parsed;
    } catch {
      // not JSON: answered below as an unknown route
    }
    const log: LoggedRequest = { method, url, api: 'other', body };
    requests.push(log);
    if (method === 'POST' && /\/messages\/count_tokens$/.test(path)) return sendJson(res, 200, { input_tokens: 12 });
    if (method === 'POST' && /\/messages$/.test(path)) {
      log.api = 'anthropic';
      return anthropic(body, res, opts, log);
    }
    if (method === 'POST' && /\/responses$/.test(path)) {
      log.api = 'responses';
      return responses(body, res, opts, log);
    }
    if (method === 'POST' && /\/chat\/completions$/.test(path)) {
      log.api = 'chat';
      return chat(body, res, opts, log);
    }
    const g = /\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens|embedContent)$/.exec(path);
    if (method === 'POST' && g) {
      log.api = 'gemini';
      if (g[2] === 'countTokens') return sendJson(res, 200, { totalTokens: 12 });
      if (g[2] === 'embedContent') return sendJson(res, 200, { embedding: { values: [0, 0, 0] } });
      return gemini(body, res, g[2] === 'streamGenerateContent', opts, log);
    }
    if (method === 'GET' && /\/models$/.test(path))
      return sendJson(res, 200, { object: 'list', data: [], models: [], has_more: false });
    sendJson(res, 404, { error: { type: 'not_found_error', message: `fake model: no route ${method} ${path}` } });
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    setToolDelayMs: (ms) => {
      opts.toolDelayMs = ms;
    },
    setSlowMs: (ms) => {
      opts.slowMs = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
