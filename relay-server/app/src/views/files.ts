/**
 * File view on a session's screen (spec 4.11.3): the project's files as git lists them, a file's text or the
 * uncommitted changes, asked and answered sealed (`pane.keys` with `file`; the answer is sealed for this phone in
 * its `keys.result`). Secret files are listed and never shown; secret-looking strings arrive masked.
 */

import { TRANSFER_CHUNK_BYTES } from '../../../../core/files/transfer.js';
import type { FileRequest, FileResultBody, TransferChunk } from '../../../../core/protocol/bodies.js';
import { parseBody } from '../api.js';
import { openFrom } from '../crypto.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';
import { keysRequest } from './control.js';

const REFUSED: Record<string, string> = {
  file_view_off: 'File view is off for this project on the computer (svc file-view on).',
  file_view_broad_root:
    'This session runs in the home folder (or /): file view is off there unless you run `svc file-view on` in it.',
  secret_file: 'A secret file: listed, never shown.',
  outside_project: 'It leads outside the project: not shown.',
  bad_path: 'Not a path inside the project.',
  not_in_project: 'Not one of the project’s files (ignored, or gone).',
  not_a_file: 'Not a file.',
  session_not_found: 'The session is gone from the computer.',
  read_failed: 'The computer could not read it.',
  transfer_limit:
    'Files from this phone are still arriving on the computer: finish them, or wait (unfinished ones go after 30 min).',
};
const refusal = (code: string) => REFUSED[code] ?? `Not shown (${code}).`;

/** Sends a file request for session `name` and resolves with the opened answer, or a sentence on why there is none. */
async function ask(
  app: App,
  hookId: string,
  name: string,
  request: { file: FileRequest } | { transfer: TransferChunk },
): Promise<FileResultBody | string> {
  const answer = await keysRequest(app, hookId, name, request);
  if ('problem' in answer) return answer.problem;
  const key = app.keyFor(hookId);
  if (!answer.frame.envelope || !key) return answer.frame.code ? refusal(answer.frame.code) : 'No answer.';
  try {
    return await parseBody('FileResultBody', await openFrom(app.device, key, 'file', answer.frame.envelope));
  } catch {
    return 'The answer did not open on this phone.';
  }
}

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/**
 * Sends `file` to the computer in sealed chunks, each answered before the next; after a lost answer (a dropped
 * connection) it asks where the transfer stands and goes on from there. Resolves with a sentence, and where the
 * computer saved it when it did.
 */
export async function sendFile(
  app: App,
  hookId: string,
  name: string,
  file: File,
  progress: (sent: number) => void,
): Promise<{ text: string; savedAs?: string }> {
  const data = new Uint8Array(await file.arrayBuffer());
  const head = {
    id: hex(crypto.getRandomValues(new Uint8Array(8)).buffer as ArrayBuffer),
    name: file.name,
    size: data.length,
    sha256: hex(await crypto.subtle.digest('SHA-256', data)),
  };
  let at = 0;
  for (let tries = 0; tries < 5; ) {
    const piece = data.subarray(at, at + TRANSFER_CHUNK_BYTES);
    const r = await ask(app, hookId, name, { transfer: { ...head, offset: at, data: base64(piece) } });
    if (typeof r === 'string') {
      tries++;
      // where does it stand? (the chunk may have arrived and only its answer got lost)
      const s = await ask(app, hookId, name, { transfer: { ...head, offset: 0 } });
      if (typeof s !== 'string' && !s.refused) at = s.received ?? at;
      continue;
    }
    if (r.refused)
      return { text: r.refused === 'too_large' ? 'Not sent: at most 100 MiB.' : `Not sent (${r.refused}).` };
    if (r.savedAs) return { text: `Sent: saved on the computer as ${r.savedAs}.`, savedAs: r.savedAs };
    at = r.received ?? at + piece.length;
    progress(at);
  }
  return { text: 'Not sent: the computer stopped answering. Try again; it goes on from what arrived.' };
}

/** A unified diff, a line each, marked for colour: added, removed, a hunk's head, a file's head. */
function diffLines(text: string): HTMLElement[] {
  return text.split('\n').map((line) => {
    const kind = /^(diff --git|index |new file|deleted file|--- |\+\+\+ )/.test(line)
      ? 'file'
      : line.startsWith('@@')
        ? 'hunk'
        : line.startsWith('+')
          ? 'add'
          : line.startsWith('-')
            ? 'del'
            : 'same';
    return h('span', { class: `diff-${kind}` }, `${line}\n`);
  });
}

/**
 * The file picked in `picker` goes to the computer; `status` says how far, then how it ended. `then` gets where the
 * computer saved it.
 */
export function onFilePicked(
  picker: HTMLInputElement,
  app: App,
  hookId: string,
  name: string,
  status: HTMLElement,
  then?: (savedAs: string) => void,
): void {
  picker.onchange = async () => {
    const chosen = picker.files?.[0];
    if (!chosen) return;
    status.textContent = `Sending ${chosen.name}…`;
    try {
      const sent = await sendFile(app, hookId, name, chosen, (at) => {
        status.textContent = `Sending ${chosen.name}: ${Math.floor((100 * at) / Math.max(1, chosen.size))}%`;
      });
      status.textContent = sent.text;
      if (sent.savedAs) then?.(sent.savedAs);
    } catch (error) {
      status.textContent = `Not sent: ${(error as Error).message}`;
    } finally {
      picker.value = '';
    }
  };
}

export function filesSection(app: App, hookId: string, name: string): HTMLElement {
  const list = h('div', { class: 'file-list' });
  const viewer = h('div', { class: 'file-viewer', 'aria-live': 'polite' });
  const show = (title: string, r: FileResultBody | string) => {
    if (typeof r === 'string') return replace(viewer, h('p', { class: 'muted' }, r));
    replace(
      viewer,
      h('h4', {}, title),
      r.refused ? h('p', { class: 'muted' }, refusal(r.refused)) : null,
      r.binary ? h('p', { class: 'muted' }, `A binary file (${r.size ?? 0} bytes): not shown.`) : null,
      r.masked ? h('p', { class: 'muted' }, `${r.masked} secret-looking string(s) masked.`) : null,
      r.text !== undefined
        ? r.op === 'diff' && r.text
          ? h('pre', { class: 'file-text diff', 'aria-label': title }, diffLines(r.text))
          : h(
              'pre',
              { class: 'file-text', 'aria-label': title },
              r.text || (r.op === 'diff' ? 'No uncommitted changes.' : ''),
            )
        : null,
      r.truncated
        ? h('p', { class: 'muted' }, 'Cut (at 256 KiB, or 50 new files); the rest is on the computer.')
        : null,
    );
  };
  const load = async () => {
    replace(list, h('p', { class: 'muted' }, 'Asking the computer…'));
    const r = await ask(app, hookId, name, { file: { op: 'list' } });
    if (typeof r === 'string' || r.refused) {
      replace(list, h('p', { class: 'muted' }, typeof r === 'string' ? r : refusal(r.refused!)));
      return;
    }
    replace(
      list,
      h(
        'button',
        {
          type: 'button',
          class: 'button secondary',
          onclick: async () => show('Uncommitted changes', await ask(app, hookId, name, { file: { op: 'diff' } })),
        },
        'Changes',
      ),
      h(
        'ul',
        { class: 'files', 'aria-label': `Files of ${name}` },
        (r.entries ?? []).map((e) =>
          h(
            'li',
            {},
            h(
              'button',
              {
                type: 'button',
                class: `file${e.secret ? ' secret' : ''}`,
                onclick: async () => show(e.path, await ask(app, hookId, name, { file: { op: 'read', path: e.path } })),
              },
              e.secret ? '🔒 ' : '',
              e.path,
            ),
            e.changed ? h('span', { class: 'tag' }, 'changed') : null,
            e.secret ? h('span', { class: 'muted' }, ' secret, not shown') : null,
          ),
        ),
      ),
      r.more ? h('p', { class: 'muted' }, `and ${r.more} more`) : null,
    );
  };
  const sendStatus = h('p', { class: 'control-status', role: 'status' });
  const picker = h('input', {
    type: 'file',
    class: 'attach-input',
    'aria-label': 'Send a file to the computer',
  }) as HTMLInputElement;
  onFilePicked(picker, app, hookId, name, sendStatus);
  const box = h(
    'details',
    { class: 'files-box' },
    h('summary', {}, 'Files'),
    h(
      'p',
      { class: 'send-file-row' },
      h('label', { class: 'button secondary attach send-file' }, 'Send a file…', picker),
      h('span', { class: 'muted' }, ' it lands in ~/Downloads/Svc on the computer'),
    ),
    sendStatus,
    list,
    viewer,
  ) as HTMLDetailsElement;
  let loaded = false;
  box.addEventListener('toggle', () => {
    if (box.open && !loaded) {
      loaded = true;
      void load();
    }
  });
  return box;
}
