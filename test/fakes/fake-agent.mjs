#!/usr/bin/env node
/**
 * A fake terminal coding agent for integration tests (plain Node, no dependencies).
 *
 * Screen: the alternate screen, a scroll region above, and the input line `› <current input>` on the bottom row.
 * A submit prints `you said: <text>` above the input line (a newline in the text shows as `⏎`, other control
 * characters as their Unicode control pictures, e.g. Tab as `␉`, ESC as `␛`) and clears the input.
 *
 * Input (stdin in raw mode, bracketed paste mode on with `ESC[?2004h`):
 * - a bracketed paste (`ESC[200~ … ESC[201~`) is inserted as text, newlines included (CR, LF, CRLF → newline);
 * - typed characters are inserted; Enter (CR or LF outside a paste) submits; Backspace, C-u (clear input),
 *   C-c (clear input; exits when empty), C-d (exits when the input is empty); other escape sequences are ignored.
 *
 * Environment:
 * - `FAKE_AGENT_PASTE_BURST_MS=<ms>`: like Codex, an Enter that arrives less than <ms> after a burst of typed text
 *   is inserted as a newline instead of submitting: 3 or more characters less than 8 ms apart, as `send-keys -l`
 *   delivers them (Codex's heuristic for a terminal without bracketed paste). Such a newline extends the window. A
 *   bracketed paste clears the window, as Codex's composer does (an explicit paste never suppresses the next Enter;
 *   the real Codex 0.169 took every Enter from 10 ms after one, docs/benchmarks.md "Submit").
 * - `FAKE_AGENT_SWALLOW_ENTER=1`: the first Enter after each bracketed paste is swallowed (as Gemini CLI has been
 *   seen to do).
 * - `FAKE_AGENT_PROMPT`: the input-line prompt (default `›`, as Codex; `❯` looks like Claude Code).
 * - `FAKE_AGENT_NAME`: the name in the banner (default: the process name).
 * - `FAKE_AGENT_STATUS=<text>`: a status line printed after the banner and after each answer (e.g. Claude Code's
 *   `? for shortcuts`, so the screen rules read the fake as idle).
 * - A submitted `/exit` or `/quit` ends the fake, as the real agents' exit commands do (unless
 *   `FAKE_AGENT_IGNORE_EXIT=1`: an agent that does not end on it, e.g. busy or hung); SIGTERM ends it too.
 * - `FAKE_AGENT_PROCESS_NAME`: the process name (default: the name this file was run as, e.g. `codex` for a
 *   symlink called `codex`).
 * - `FAKE_AGENT_TITLE`: set the terminal title (tmux `#{pane_title}`), as Claude Code names its session.
 * - `FAKE_AGENT_HOOK=<shell command>`: like Claude Code's hooks, each submit runs the command with the JSON of a
 *   `UserPromptSubmit` event on stdin (`hook_event_name`, `cwd`, `prompt`, `session_id`) and, after the answer is
 *   shown, with a `Stop` event; the first one's `hookSpecificOutput.additionalContext` is shown as `context: <text>`.
 * - `FAKE_AGENT_BUSY_MS=<ms>`: print a numbered `working… <n>` line every <ms> without end, as a build log or an
 *   agent's spinner keeps a screen changing (the listener's cost with busy panes, `bench/state.ts`).
 * - `FAKE_AGENT_DIALOG_ON_PASTE=1`: the first bracketed paste is followed by an approval dialog in Codex's words
 *   (`Would you like to run the following command?` … `Press enter to confirm or esc to cancel`) in place of the
 *   input line, as when the agent asks while a message is on its way: Enter then logs `confirm`, Escape `cancel`,
 *   and either closes it.
 * - `FAKE_AGENT_TURN_MS=<ms>`: a submit starts a turn of <ms>, as a model's reply takes time: the title is a braille
 *   spinner frame (`⠋ <FAKE_AGENT_TITLE or name>`, Claude Code's working cue) until the answer `you said: …` is
 *   printed, then the title and FAKE_AGENT_STATUS come back. A message submitted during the turn is queued, as
 *   Claude Code queues one (`queued: <text>` on screen, logged `queued`), and answered after the turn.
 * - `FAKE_AGENT_LOG=<file>`: append one JSON line per event, for exact assertions and timing:
 *   `{"event":"ready"|"paste"|"type"|"submit"|"newline"|"swallow"|"confirm"|"cancel"|"exit", "t": <ms since start>, …}`;
 *   `submit`/`newline`/`swallow` carry `sinceTextMs` (time since the last text arrived), `submit` the `text`.
 *
 * What tmux shows as `#{pane_current_command}` for this script (tmux 3.3a, Linux; checked by hand and by
 * `test/integration/tmux.test.ts`): tmux reads argv[0] of the pane's foreground process group leader from
 * `/proc/<pid>/cmdline` (not `/proc/<pid>/comm`) and takes its basename. Run through the `#!/usr/bin/env node`
 * line, argv is `node /path/codex`, so a symlink named `codex` alone shows `node`. Setting `process.title`
 * rewrites argv[0] (and comm) and tmux then shows `codex`; this file sets it first thing, so only the first
 * few milliseconds of its life show `node` (tests wait for the name). A bash wrapper `exec -a codex node …` also
 * works (argv[0] = codex while comm stays `node`); `sh`/dash has no `exec -a`.
 */
import { execFileSync } from 'node:child_process';
import { openSync, writeSync } from 'node:fs';
import { basename } from 'node:path';

const invokedAs = basename(process.argv[1] ?? 'fake-agent').replace(/\.m?js$/, '');
const processName = process.env.FAKE_AGENT_PROCESS_NAME || invokedAs;
process.title = processName;

const name = process.env.FAKE_AGENT_NAME || processName;
const burstMs = Number(process.env.FAKE_AGENT_PASTE_BURST_MS || 0);
const swallowAfterPaste = process.env.FAKE_AGENT_SWALLOW_ENTER === '1';
const logFile = process.env.FAKE_AGENT_LOG || '';
const prompt = process.env.FAKE_AGENT_PROMPT || '›';
const started = performance.now();

const BURST_CHAR_INTERVAL_MS = 8;
const BURST_MIN_CHARS = 3;
const PASTE_START = '\x1b[200~';
const PASTE_END = '\x1b[201~';

const out = process.stdout;
let rows = out.rows || 24;
let cols = out.columns || 80;

let input = '';
let history = [];
let buf = '';
let inPaste = false;
let pasteBuf = '';
let lastTextAt = -Infinity;
let enterSuppressUntil = -Infinity;
let lastCharAt = -Infinity;
let burstChars = 0;
let swallowNext = false;
const turnMs = Number(process.env.FAKE_AGENT_TURN_MS || 0);
/** The title outside a turn (a turn puts a spinner frame before it). */
const title = process.env.FAKE_AGENT_TITLE || name;
let inTurn = false;
/** Messages submitted during a turn (FAKE_AGENT_TURN_MS), answered after it. */
const queued = [];
let escTimer = null;
let dialogOnPaste = process.env.FAKE_AGENT_DIALOG_ON_PASTE === '1';
let dialog = false;
const DIALOG = [
  '  Would you like to run the following command?',
  '  $ touch svc-approval-probe.txt',
  '› 1. Yes, proceed (y)',
  '  2. No, and tell Codex what to do differently (esc)',
  '  Press enter to confirm or esc to cancel',
];

const now = () => performance.now() - started;

/**
 * The log, opened once: a line written after the test removed its folder (the fake's `exit`, as a killed tmux
 * server's SIGHUP reaches it) goes to the removed file and never makes it again, which would fail the removal
 * (ENOTEMPTY).
 */
let logFd = null;
try {
  if (logFile) logFd = openSync(logFile, 'a');
} catch {
  // no log where it cannot be written
}

function log(event, fields = {}) {
  if (logFd === null) return;
  try {
    writeSync(logFd, `${JSON.stringify({ event, t: Math.round(now() * 10) / 10, ...fields })}\n`);
  } catch {
    // a test that removed its temp dir must not crash the fake
  }
}

/** Newlines as ⏎, other control characters as Unicode control pictures. */
function visible(text) {
  let s = '';
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (ch === '\n') s += '⏎';
    else if (c < 0x20) s += String.fromCodePoint(0x2400 + c);
    else if (c === 0x7f) s += '␡';
    else if (c >= 0x80 && c < 0xa0) s += '�';
    else s += ch;
  }
  return s;
}

/** Rough terminal width: East Asian wide and emoji as 2 columns. */
function width(text) {
  let w = 0;
  for (const ch of text) w += ch.codePointAt(0) >= 0x2e80 ? 2 : 1;
  return w;
}

function fitTail(text, maxCols) {
  if (width(text) <= maxCols) return text;
  const chars = [...text];
  let w = 1;
  let i = chars.length;
  while (i > 0 && w + width(chars[i - 1]) <= maxCols) w += width(chars[--i]);
  return `…${chars.slice(i).join('')}`;
}

function drawInput() {
  if (dialog) {
    DIALOG.forEach((line, i) => {
      out.write(`\x1b[${rows - DIALOG.length + 1 + i};1H\x1b[2K${line}`);
    });
    return;
  }
  const room = Math.max(1, cols - width(prompt) - 2);
  out.write(`\x1b[${rows};1H\x1b[2K${prompt} ${fitTail(visible(input), room)}`);
}

/** Print a line at the bottom of the scroll region (the terminal wraps and scrolls it). */
function printLine(text) {
  out.write(`\x1b[${Math.max(1, rows - 1)};1H\r\n${text}`);
  drawInput();
}

function say(text) {
  history.push(text);
  if (history.length > 500) history = history.slice(-250);
  printLine(text);
}

function setupScreen() {
  rows = out.rows || rows;
  cols = out.columns || cols;
  out.write(`\x1b[?1049h\x1b[?2004h\x1b[2J\x1b[1;${Math.max(1, rows - 1)}r`);
  for (const line of history.slice(-rows)) out.write(`\x1b[${Math.max(1, rows - 1)};1H\r\n${line}`);
  drawInput();
}

function restoreScreen() {
  out.write('\x1b[?2004l\x1b[r\x1b[?1049l');
}

function quit(code = 0) {
  log('exit');
  restoreScreen();
  process.exit(code);
}

function insertText(text, how) {
  input += text;
  lastTextAt = now();
  if (how === 'paste') {
    enterSuppressUntil = 0;
    burstChars = 0;
    if (swallowAfterPaste) swallowNext = true;
  }
  log(how, { length: text.length });
  if (how === 'paste' && dialogOnPaste) {
    dialogOnPaste = false;
    dialog = true;
  }
  drawInput();
}

/** Enter (`confirm`) or Escape (`cancel`) in the approval dialog: it closes and the screen is drawn again. */
function closeDialog(event) {
  dialog = false;
  log(event);
  setupScreen();
}

function typeChars(text) {
  const t = now();
  for (const _ of text) {
    burstChars = t - lastCharAt <= BURST_CHAR_INTERVAL_MS ? burstChars + 1 : 1;
    lastCharAt = t;
  }
  if (burstMs > 0 && burstChars >= BURST_MIN_CHARS) enterSuppressUntil = t + burstMs;
  insertText(text, 'type');
}

function enter() {
  const t = now();
  const sinceTextMs = Math.round((t - lastTextAt) * 10) / 10;
  burstChars = 0;
  if (dialog) return closeDialog('confirm');
  if (swallowNext) {
    swallowNext = false;
    log('swallow', { sinceTextMs });
    return;
  }
  if (t < enterSuppressUntil) {
    input += '\n';
    enterSuppressUntil = t + burstMs;
    log('newline', { sinceTextMs });
    drawInput();
    return;
  }
  const text = input;
  input = '';
  if (text === '') {
    drawInput();
    return;
  }
  if (turnMs > 0 && inTurn) {
    log('queued', { text, sinceTextMs });
    queued.push(text);
    say(`queued: ${visible(text)}`);
    return;
  }
  log('submit', { text, sinceTextMs });
  if ((text === '/exit' || text === '/quit') && process.env.FAKE_AGENT_IGNORE_EXIT !== '1') quit(0);
  const context = hook('UserPromptSubmit', { prompt: text });
  if (context) say(`context: ${context.slice(0, 60)}`);
  if (turnMs > 0) return startTurn(text);
  answer(text);
}

function answer(text) {
  say(`you said: ${visible(text)}`);
  hook('Stop', { stop_hook_active: false });
  if (process.env.FAKE_AGENT_STATUS) say(process.env.FAKE_AGENT_STATUS);
}

/** FAKE_AGENT_TURN_MS: the answer after a turn, the spinner in the title meanwhile; then what was queued. */
function startTurn(text) {
  inTurn = true;
  out.write(`\x1b]2;⠋ ${title}\x1b\\`);
  drawInput();
  setTimeout(() => {
    inTurn = false;
    out.write(`\x1b]2;${title}\x1b\\`);
    answer(text);
    for (const q of queued.splice(0)) answer(q);
  }, turnMs);
}

/** Run FAKE_AGENT_HOOK for one event, as Claude Code runs a command hook; its additional context, if any. */
function hook(event, fields) {
  const command = process.env.FAKE_AGENT_HOOK;
  if (!command) return null;
  const input = JSON.stringify({ session_id: 'fake', cwd: process.cwd(), hook_event_name: event, ...fields });
  try {
    const out = execFileSync('/bin/sh', ['-c', command], { input, encoding: 'utf8', timeout: 10_000 });
    log('hook', { hookEvent: event, output: out.trim() });
    return out.trim() ? (JSON.parse(out).hookSpecificOutput?.additionalContext ?? null) : null;
  } catch (err) {
    log('hook', { hookEvent: event, error: String(err) });
    return null;
  }
}

function control(ch) {
  switch (ch) {
    case '\x7f':
    case '\b':
      input = [...input].slice(0, -1).join('');
      drawInput();
      return;
    case '\x15':
      input = '';
      drawInput();
      return;
    case '\x03':
      if (input === '') quit(0);
      input = '';
      drawInput();
      return;
    case '\x04':
      if (input === '') quit(0);
      return;
  }
}

/** Parse everything buffered; an incomplete sequence at the end waits for more input. */
function consume() {
  while (buf.length > 0) {
    if (inPaste) {
      const end = buf.indexOf(PASTE_END);
      if (end < 0) {
        // keep a possible partial end marker for the next chunk
        let keep = 0;
        for (let k = Math.min(PASTE_END.length - 1, buf.length); k > 0; k--) {
          if (PASTE_END.startsWith(buf.slice(-k))) {
            keep = k;
            break;
          }
        }
        pasteBuf += buf.slice(0, buf.length - keep);
        buf = buf.slice(buf.length - keep);
        return;
      }
      pasteBuf += buf.slice(0, end);
      buf = buf.slice(end + PASTE_END.length);
      inPaste = false;
      insertText(pasteBuf.replace(/\r\n?/g, '\n'), 'paste');
      pasteBuf = '';
      continue;
    }
    const ch = buf[0];
    if (ch === '\x1b') {
      if (buf.length === 1) {
        // a lone ESC: the Escape key, unless the rest of a sequence follows at once
        escTimer = setTimeout(() => {
          if (buf === '\x1b') {
            buf = '';
            if (dialog) closeDialog('cancel');
            else log('escape');
          }
        }, 30);
        return;
      }
      if (buf[1] === '[') {
        let i = 2;
        while (i < buf.length && !(buf.charCodeAt(i) >= 0x40 && buf.charCodeAt(i) <= 0x7e)) i++;
        if (i >= buf.length) {
          if (buf.length < 64) return; // wait for the rest
          buf = buf.slice(2);
          continue;
        }
        const seq = buf.slice(0, i + 1);
        buf = buf.slice(i + 1);
        if (seq === PASTE_START) inPaste = true;
        continue; // arrows, function keys, focus events: ignored
      }
      if (buf[1] === 'O') {
        if (buf.length < 3) return;
        buf = buf.slice(3);
        continue;
      }
      buf = buf.slice(1); // ESC + key (Alt): drop the ESC, keep the key
      continue;
    }
    if (ch === '\r' || ch === '\n') {
      buf = buf.slice(1);
      enter();
      continue;
    }
    if ('\x7f\b\x15\x03\x04'.includes(ch)) {
      buf = buf.slice(1);
      control(ch);
      continue;
    }
    // a run of ordinary characters (other control characters such as Tab are text here)
    let j = 0;
    while (j < buf.length && !'\x1b\r\n\x7f\b\x15\x03\x04'.includes(buf[j])) j++;
    const run = buf.slice(0, j);
    buf = buf.slice(j);
    typeChars(run);
  }
}

process.stdin.setEncoding('utf8');
if (process.stdin.isTTY) process.stdin.setRawMode(true);
process.stdin.on('data', (data) => {
  if (escTimer) {
    clearTimeout(escTimer);
    escTimer = null;
  }
  buf += data;
  consume();
});
process.stdin.on('end', () => quit(0));
process.stdin.on('error', () => quit(0));
for (const sig of ['SIGTERM', 'SIGHUP']) process.on(sig, () => quit(0));
out.on('resize', setupScreen);
out.on('error', () => process.exit(0));

if (process.env.FAKE_AGENT_TITLE || turnMs > 0) out.write(`\x1b]2;${title}\x1b\\`);
setupScreen();
say(`✻ ${name} (fake agent) · pid ${process.pid}`);
say(`cwd: ${process.cwd()}`);
if (process.env.FAKE_AGENT_STATUS) say(process.env.FAKE_AGENT_STATUS);
log('ready', { pid: process.pid, name, processName, rows, cols });
const busyMs = Number(process.env.FAKE_AGENT_BUSY_MS || 0);
if (busyMs > 0) {
  let n = 0;
  setInterval(() => say(`working… ${++n}`), busyMs);
}
