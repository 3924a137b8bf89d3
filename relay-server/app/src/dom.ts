/** A few lines instead of a framework: build elements, replace a node's children. */

type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = String(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** A 24×24 outline icon from path data, hidden from screen readers (its control carries the name). */
export function icon(d: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '24');
  svg.setAttribute('height', '24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', d);
  svg.appendChild(path);
  return svg;
}

/** Icon paths (24×24, stroked). */
export const ICONS = {
  back: 'M15 5l-7 7 7 7',
  shield: 'M12 3l7 3v6c0 4.4-3 7.6-7 9-4-1.4-7-4.6-7-9V6zM9 12l2 2 4-4',
  reconnect: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
};

export function replace(el: Node, ...children: (Child | Child[])[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
}

/**
 * `replace`, but only when the new children differ from what is shown (their markup, a `<details>` being open
 * aside). A screen that redraws every second (offline, "last seen" ageing) must not swap the element under a
 * finger: a tap whose press and release land on two different elements is no click, and an open list would close.
 */
export function replaceChanged(el: Element, ...children: (Child | Child[])[]): void {
  const next = document.createElement('div');
  append(next, children);
  const markup = (e: Element) => e.innerHTML.replace(/ open=""/g, '');
  if (markup(next) === markup(el)) return;
  replace(el, ...next.childNodes);
}
