/**
 * An agent's reply as the person reads it: Markdown rendered by marked (CommonMark and GitHub's tables, lists and
 * fenced code), then sanitised by DOMPurify. Nothing an agent writes can run script in the app or reach out:
 * - raw HTML in the reply is shown as text, never parsed (`<img src=x onerror=…>` reads as written);
 * - a link keeps only an http(s) or mailto address (a `javascript:` or `data:` link is text), opens outside the app,
 *   and carries no referrer;
 * - an image is a link to it, never loaded (a remote image would tell its server the reply was read);
 * - DOMPurify then keeps only the tags and attributes below, so a renderer bug cannot add one.
 * A chunk of its own, loaded by the conversation when it first draws a reply (~20 KB gzip).
 */
import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

const SAFE_URL = /^(https?:|mailto:)/i;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag) {
      const text = escapeHtml(token.text);
      return 'block' in token && token.block ? `<p class="raw">${text}</p>` : text;
    },
    link({ href, title, tokens }: Tokens.Link) {
      const inner = this.parser.parseInline(tokens);
      if (!SAFE_URL.test(href.trim())) return inner;
      return `<a href="${escapeHtml(href)}"${title ? ` title="${escapeHtml(title)}"` : ''}>${inner}</a>`;
    },
    image({ href, text }: Tokens.Image) {
      const label = escapeHtml(text || 'image');
      return SAFE_URL.test(href.trim()) ? `<a href="${escapeHtml(href)}">${label}</a>` : label;
    },
  },
});

const ALLOWED_TAGS = [
  'p',
  'br',
  'hr',
  'strong',
  'em',
  'del',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'a',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'input',
];

let hooked = false;

/** `text` (Markdown) as sanitised nodes, to put inside a reply's bubble. */
export function renderMarkdown(text: string): DocumentFragment {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
      }
      // a code block scrolls sideways at phone width: reachable from the keyboard too
      if (node.tagName === 'PRE') node.setAttribute('tabindex', '0');
      // GitHub task lists: a checkbox to read, not to tick
      if (node.tagName === 'INPUT') {
        if (node.getAttribute('type') !== 'checkbox') node.remove();
        else {
          node.setAttribute('disabled', '');
          node.setAttribute('aria-label', node.hasAttribute('checked') ? 'done' : 'to do');
        }
      }
    });
  }
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ['href', 'title', 'type', 'checked', 'disabled', 'start', 'align', 'class'],
    ALLOWED_URI_REGEXP: SAFE_URL,
    // checked against ALLOWED_URI_REGEXP otherwise, which strips a task list's `type`, a list's `start`, a cell's `align`
    ADD_URI_SAFE_ATTR: ['type', 'start', 'align', 'class'],
    RETURN_DOM_FRAGMENT: true,
  });
}
