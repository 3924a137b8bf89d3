/**
 * The page of `svc debug ui`: one HTML document with its style and script inline, no build step and nothing
 * fetched from elsewhere. The script is `pageMain` below, type-checked and linted like the rest and sent as its
 * source text, so it must not use anything outside its own body (no imports, no module-level names).
 *
 * Left: the actor tree (machine actors, each with its current state). Middle: the selected actor's chart, drawn
 * from its chart model (core/debug/statechart.ts) as nested boxes, parallel regions side by side, each state listing
 * its transitions; the active states are highlighted and flash when entered. Right: the event log, newest first,
 * showing only changes of state by default; the screen watch's ticks (the inventory looking at the agent panes four
 * times a second, `watch.resting` ↔ `watch.looking`) are behind a toggle of their own, off by default.
 * Everything is put into the page with textContent, never as HTML.
 */

/** Runs in the browser. */
function pageMain(): void {
  type Value = string | { [k: string]: Value };
  interface Transition {
    event: string;
    kind: string;
    targets: string[];
    guard: string | null;
  }
  interface ChartState {
    id: string;
    key: string;
    type: string;
    description: string | null;
    invokes: string[];
    transitions: Transition[];
    children: ChartState[];
  }
  interface Chart {
    machine: string;
    root: ChartState;
  }
  interface Actor {
    key: string;
    id: string;
    parent: string | null;
    machine: string | null;
    value: Value | null;
    status: string;
    summary: Record<string, string | number | boolean | null>;
  }
  interface Record_ {
    seq: number;
    at: number;
    actor: string;
    key: string;
    parent: string | null;
    machine: string;
    event: string;
    from: Value | null;
    to: Value;
    status: string;
    summary: Actor['summary'];
  }

  const params = new URLSearchParams(location.search);
  const token = params.get('token') ?? '';
  const api = (path: string) => `${path}?token=${encodeURIComponent(token)}`;
  const $ = (id: string) => document.getElementById(id) as HTMLElement;
  const el = (tag: string, cls?: string, text?: string) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  const actors = new Map<string, Actor>();
  const charts = new Map<string, Chart>();
  let selected: string | null = null;
  const wanted = params.get('actor');
  let drawnChart: string | null = null;
  const seen = new Set<number>();

  const formatValue = (v: Value | null): string => {
    if (v === null) return '-';
    if (typeof v === 'string') return v;
    const leaves: string[] = [];
    const walk = (x: Value, prefix: string) => {
      if (typeof x === 'string') leaves.push(prefix ? `${prefix}.${x}` : x);
      else for (const [k, c] of Object.entries(x)) walk(c, prefix ? `${prefix}.${k}` : k);
    };
    walk(v, '');
    return leaves.join(', ');
  };
  const activeIds = (machine: string, v: Value | null): Set<string> => {
    const ids = new Set<string>([machine]);
    const walk = (x: Value, prefix: string) => {
      if (typeof x === 'string') ids.add(`${prefix}.${x}`);
      else
        for (const [k, c] of Object.entries(x)) {
          ids.add(`${prefix}.${k}`);
          walk(c, `${prefix}.${k}`);
        }
    };
    if (v !== null) walk(v, machine);
    return ids;
  };
  const time = (at: number) => new Date(at).toISOString().slice(11, 23);
  const leaves = (v: Value | null) => (v === null ? [] : formatValue(v).split(', '));
  /** A tick of the inventory's screen watch: it moved between looking and resting, and nothing else moved. */
  const isTick = (machine: string, from: Value | null, to: Value): boolean => {
    if (machine !== 'inventory' || from === null) return false;
    const before = leaves(from);
    const after = leaves(to);
    const changed = [...before.filter((l) => !after.includes(l)), ...after.filter((l) => !before.includes(l))];
    return changed.length > 0 && changed.every((l) => l === 'watch.resting' || l === 'watch.looking');
  };
  /** Only the regions that moved: `delivery.ready → delivery.injecting`; null when none did. */
  const move = (from: Value | null, to: Value): string | null => {
    if (from === null) return `(start) → ${formatValue(to)}`;
    const before = leaves(from);
    const after = leaves(to);
    const left = before.filter((l) => !after.includes(l));
    const entered = after.filter((l) => !before.includes(l));
    if (left.length === 0 && entered.length === 0) return null;
    return `${left.join(', ') || '-'} → ${entered.join(', ') || '-'}`;
  };
  const summaryText = (s: Actor['summary']) =>
    Object.entries(s)
      .map(([k, v]) => `${k}=${v === null ? '-' : v}`)
      .join('  ');

  // ---- the tree
  const drawTree = () => {
    const tree = $('tree');
    tree.textContent = '';
    const list = [...actors.values()].filter((a) => a.machine);
    const keys = new Set(list.map((a) => a.key));
    const children = new Map<string | null, Actor[]>();
    for (const a of list) {
      const p = a.parent && keys.has(a.parent) ? a.parent : null;
      children.set(p, [...(children.get(p) ?? []), a]);
    }
    const visit = (a: Actor, depth: number) => {
      const row = el('div', `actor${a.key === selected ? ' selected' : ''}`);
      row.dataset.key = a.key;
      row.dataset.id = a.id;
      row.style.paddingLeft = `${depth * 14 + 6}px`;
      row.append(
        el('span', 'id', a.id),
        el('span', 'machine', a.machine ?? ''),
        el('span', 'value', formatValue(a.value)),
      );
      row.addEventListener('click', () => select(a.key));
      tree.append(row);
      for (const c of (children.get(a.key) ?? []).sort((x, y) => x.id.localeCompare(y.id))) visit(c, depth + 1);
    };
    for (const r of (children.get(null) ?? []).sort((x, y) => x.id.localeCompare(y.id))) visit(r, 0);
    if (list.length === 0) tree.append(el('div', 'empty', 'no actors'));
  };

  // ---- the chart
  const short = (machine: string, id: string) => (id === machine ? machine : id.slice(machine.length + 1));
  const drawState = (machine: string, s: ChartState): HTMLElement => {
    const box = el('div', `state ${s.type}`);
    box.dataset.id = s.id;
    const title = el('div', 'title', s.id === machine ? machine : s.key);
    if (s.invokes.length > 0) title.append(el('span', 'invokes', ` ⟳ ${s.invokes.join(', ')}`));
    if (s.description) title.title = s.description;
    box.append(title);
    if (s.transitions.length > 0) {
      const ul = el('ul', 'transitions');
      for (const t of s.transitions) {
        const targets = t.targets.map((x) => short(machine, x)).join(', ') || '(stays)';
        const li = el('li', `t ${t.kind}`, `${t.event}${t.guard ? ` [${t.guard}]` : ''} → ${targets}`);
        li.dataset.event = t.event;
        ul.append(li);
      }
      box.append(ul);
    }
    if (s.children.length > 0) {
      const kids = el('div', s.type === 'parallel' ? 'children regions' : 'children');
      for (const c of s.children) kids.append(drawState(machine, c));
      box.append(kids);
    }
    return box;
  };
  const eventLabel = (raw: string) => {
    if (raw.startsWith('xstate.after.')) return `after ${raw.split('.')[2]}`;
    if (raw.startsWith('xstate.done.actor.')) return 'done:';
    if (raw.startsWith('xstate.error.actor.')) return 'error:';
    return raw;
  };
  const highlight = (a: Actor, taken?: { event: string; from: Value | null }) => {
    const chart = $('chart');
    if (!a.machine) return;
    const now = activeIds(a.machine, a.value);
    const before = taken?.from ? activeIds(a.machine, taken.from) : null;
    for (const box of Array.from(chart.querySelectorAll<HTMLElement>('.state'))) {
      const id = box.dataset.id ?? '';
      const on = now.has(id);
      box.classList.toggle('active', on);
      if (on && before && !before.has(id)) {
        box.classList.remove('flash');
        void box.offsetWidth;
        box.classList.add('flash');
      }
    }
    if (taken && before) {
      const label = eventLabel(taken.event);
      for (const li of Array.from(chart.querySelectorAll<HTMLElement>('li.t'))) {
        const box = li.closest<HTMLElement>('.state');
        const ev = li.dataset.event ?? '';
        if (
          box &&
          before.has(box.dataset.id ?? '') &&
          (ev === label || (label.endsWith(':') && ev.startsWith(label)))
        ) {
          li.classList.remove('taken');
          void li.offsetWidth;
          li.classList.add('taken');
        }
      }
    }
  };
  const drawSelected = () => {
    const a = selected ? actors.get(selected) : undefined;
    $('title').textContent = a ? `${a.id} · ${a.machine}` : 'no actor selected';
    $('state').textContent = a ? formatValue(a.value) : '';
    $('summary').textContent = a ? summaryText(a.summary) : '';
    const chart = $('chart');
    const key = a?.machine && charts.has(a.machine) ? `${a.key}:${a.machine}` : null;
    if (key !== drawnChart) {
      chart.textContent = '';
      drawnChart = key;
      if (a?.machine) {
        const model = charts.get(a.machine);
        if (model) chart.append(drawState(model.machine, model.root));
        else chart.append(el('div', 'empty', `no chart for ${a.machine}`));
      }
    }
    if (a) highlight(a);
  };
  const select = (key: string) => {
    selected = key;
    drawTree();
    drawSelected();
    drawLogFilter();
  };

  // ---- the log
  const hidden = (li: HTMLElement) => {
    const only = ($('only') as HTMLInputElement).checked;
    const moves = ($('moves') as HTMLInputElement).checked;
    const ticks = ($('ticks') as HTMLInputElement).checked;
    const id = selected ? actors.get(selected)?.id : undefined;
    return (
      (only && li.dataset.actor !== id) ||
      (moves && li.classList.contains('same')) ||
      (!ticks && li.classList.contains('tick'))
    );
  };
  const drawLogFilter = () => {
    for (const li of Array.from($('log').querySelectorAll<HTMLElement>('li'))) li.hidden = hidden(li);
  };
  const addLog = (t: Record_) => {
    if (seen.has(t.seq)) return;
    seen.add(t.seq);
    const moved = t.status === 'active' ? move(t.from, t.to) : `${formatValue(t.from)} → (${t.status})`;
    const li = el(
      'li',
      `${moved === null ? 'same' : 'moved'}${t.status === 'active' && isTick(t.machine, t.from, t.to) ? ' tick' : ''}`,
    );
    li.dataset.actor = t.actor;
    li.dataset.event = t.event;
    li.dataset.at = String(t.at);
    li.dataset.to = formatValue(t.to);
    li.append(
      el('span', 'time', time(t.at)),
      el('span', 'who', t.actor),
      el('span', 'ev', t.event),
      el('span', 'move', moved ?? '(no change)'),
    );
    li.addEventListener('click', () => {
      const a = [...actors.values()].find((x) => x.key === t.key);
      if (a) select(a.key);
    });
    const log = $('log');
    log.prepend(li);
    // the ticks, four a second and hidden by default, are kept apart: they never push a change of state out
    const kept = log.querySelectorAll(li.classList.contains('tick') ? 'li.tick' : 'li:not(.tick)');
    for (let i = kept.length - 1; i >= (li.classList.contains('tick') ? 100 : 400); i--) kept[i]?.remove();
    li.hidden = hidden(li);
  };

  // ---- data
  const setStatus = (text: string, ok: boolean) => {
    const s = $('status');
    s.textContent = text;
    s.className = ok ? 'ok' : 'bad';
  };
  const pickDefault = () => {
    if (selected && actors.has(selected)) return;
    const list = [...actors.values()].filter((a) => a.machine);
    const byWanted = wanted ? list.find((a) => a.id === wanted) : undefined;
    const pick = byWanted ?? list.find((a) => a.machine === 'session') ?? list.find((a) => a.parent === null);
    selected = pick?.key ?? null;
  };
  const load = async () => {
    const [state, chartsReply] = await Promise.all([
      fetch(api('/api/state')).then((r) => r.json()),
      charts.size > 0 ? null : fetch(api('/api/charts')).then((r) => r.json()),
    ]);
    if (chartsReply?.charts) for (const c of chartsReply.charts as Chart[]) charts.set(c.machine, c);
    if (!state.actors) {
      setStatus(`listener not reachable: ${state.error ?? 'no answer'}`, false);
      return;
    }
    actors.clear();
    for (const a of state.actors as Actor[]) actors.set(a.key, a);
    if (wanted && selected && actors.get(selected)?.id !== wanted) {
      const w = [...actors.values()].find((a) => a.id === wanted);
      if (w) selected = w.key;
    }
    pickDefault();
    drawTree();
    drawSelected();
  };
  let treeQueued = false;
  const onTransition = (t: Record_) => {
    addLog(t);
    if (t.status !== 'active') {
      actors.delete(t.key);
      if (selected === t.key) {
        selected = null;
        pickDefault();
      }
    } else {
      const a = actors.get(t.key) ?? {
        key: t.key,
        id: t.actor,
        parent: t.parent,
        machine: t.machine,
        value: t.to,
        status: t.status,
        summary: t.summary,
      };
      a.value = t.to;
      a.summary = t.summary;
      actors.set(t.key, a);
      if (wanted && a.id === wanted && selected !== a.key && actors.get(selected ?? '')?.id !== wanted)
        selected = a.key;
      if (!selected) pickDefault();
    }
    if (selected === t.key) {
      drawSelected();
      const a = actors.get(t.key);
      if (a) highlight(a, { event: t.event, from: t.from });
    }
    if (!treeQueued) {
      treeQueued = true;
      requestAnimationFrame(() => {
        treeQueued = false;
        drawTree();
        if (!selected || !actors.has(selected)) drawSelected();
      });
    }
  };

  ($('only') as HTMLInputElement).addEventListener('change', drawLogFilter);
  ($('moves') as HTMLInputElement).addEventListener('change', drawLogFilter);
  ($('ticks') as HTMLInputElement).addEventListener('change', drawLogFilter);
  const source = new EventSource(api('/api/events'));
  source.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.type === 'transition') onTransition(msg.transition);
    else if (msg.type === 'recent') for (const t of msg.transitions as Record_[]) addLog(t);
    else if (msg.type === 'up') {
      setStatus('live', true);
      void load();
    } else if (msg.type === 'down') setStatus(`listener not reachable: ${msg.message}`, false);
  };
  source.onerror = () => setStatus('lost the page server (svc debug ui stopped?)', false);
  void load();
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fbfbfc; --muted: #6a737d; --line: #d0d7de; --on: #0969da;
  --onbg: #ddf4ff; --flash: #ffd33d; --panel: #f3f4f6; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8b949e; --line: #30363d;
  --on: #58a6ff; --onbg: #10294a; --flash: #9e6a03; --panel: #161b22; } }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--fg); background: var(--bg); }
header { padding: 8px 12px; border-bottom: 1px solid var(--line); display: flex; gap: 12px; align-items: baseline; }
header h1 { font-size: 14px; margin: 0; }
#status.ok { color: #1a7f37; } #status.bad { color: #cf222e; }
main { display: grid; grid-template-columns: minmax(220px, 22%) 1fr minmax(280px, 30%); height: calc(100vh - 38px); }
main > * { overflow: auto; padding: 8px; }
#tree { border-right: 1px solid var(--line); }
.actor { display: grid; grid-template-columns: auto; padding: 3px 6px; border-radius: 4px; cursor: pointer; }
.actor:hover { background: var(--panel); }
.actor.selected { background: var(--onbg); }
.actor .machine { color: var(--muted); font-size: 11px; }
.actor .value { color: var(--on); font-size: 11px; }
#view h2 { font-size: 14px; margin: 0 0 2px; }
#state { color: var(--on); } #summary { color: var(--muted); margin-bottom: 8px; white-space: pre-wrap; }
.state { border: 1px solid var(--line); border-radius: 8px; padding: 4px 6px; margin: 4px; background: var(--bg); min-width: 90px; }
.state.parallel > .children { display: flex; flex-wrap: wrap; gap: 0; }
.state.parallel > .children > .state { border-style: dashed; flex: 1 1 180px; }
.children { display: flex; flex-wrap: wrap; align-items: flex-start; }
.state.active { border: 2px solid var(--on); background: var(--onbg); }
.state.active > .title { color: var(--on); font-weight: bold; }
.state.final { border-width: 3px; border-style: double; }
.title .invokes { color: var(--muted); font-weight: normal; font-size: 11px; }
ul.transitions { list-style: none; margin: 2px 0; padding: 0; font-size: 11px; color: var(--muted); }
li.t.taken { animation: flash 1.5s ease-out; color: var(--fg); }
.state.flash { animation: flash 1.5s ease-out; }
@keyframes flash { from { background: var(--flash); } }
#logPane { border-left: 1px solid var(--line); }
#log { list-style: none; margin: 0; padding: 0; }
#log li { padding: 2px 0; border-bottom: 1px solid var(--line); cursor: pointer; display: grid; grid-template-columns: auto 1fr; gap: 0 8px; }
#log li.same { color: var(--muted); }
#log .time { color: var(--muted); } #log .who { font-weight: bold; } #log .ev { grid-column: 1 / -1; }
#log .move { grid-column: 1 / -1; color: var(--on); } #log li.same .move { color: var(--muted); }
.empty { color: var(--muted); padding: 8px; }
.filters { display: flex; flex-wrap: wrap; gap: 4px 12px; margin-bottom: 6px; color: var(--muted); }
`;

export function debugPageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>svc debug</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>svc debug</h1><span id="status">connecting…</span></header>
<main>
  <nav id="tree"></nav>
  <section id="view"><h2 id="title"></h2><div id="state"></div><div id="summary"></div><div id="chart"></div></section>
  <section id="logPane">
    <div class="filters"><label><input type="checkbox" id="moves" checked> only changes of state</label>
    <label><input type="checkbox" id="ticks"> the screen watch's ticks</label>
    <label><input type="checkbox" id="only"> only the selected actor</label></div>
    <ol id="log"></ol>
  </section>
</main>
<script>(${pageMain.toString()})();</script>
</body>
</html>
`;
}
