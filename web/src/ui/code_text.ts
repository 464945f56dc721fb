// Messages name commands, flags and config keys in backticks, as the docs do ("Submit one
// with `gpuscale task submit FILE`"). On the page each backticked part is a <code> element
// and the backticks go: the text is never shown with literal backticks. A lone backtick (no
// closing one) stays as typed. codeParts() is the pure split (unit-tested); the text is
// still set as text, never parsed as HTML.

import { h, mount, type Child } from './dom';

export interface TextPart {
  text: string;
  code: boolean;
}

export function codeParts(text: string): TextPart[] {
  const parts: TextPart[] = [];
  const push = (part: string, code: boolean) => {
    if (part === '') return;
    const last = parts[parts.length - 1];
    if (last && !last.code && !code) last.text += part;
    else parts.push({ text: part, code });
  };
  let rest = text;
  for (;;) {
    const open = rest.indexOf('`');
    const close = open < 0 ? -1 : rest.indexOf('`', open + 1);
    if (close < 0) break;
    push(rest.slice(0, open), false);
    push(rest.slice(open + 1, close), true);
    rest = rest.slice(close + 1);
  }
  push(rest, false);
  return parts;
}

// The children that show `text` with its backticked parts as <code>.
export function withCode(text: string): Child[] {
  return codeParts(text).map((p) => (p.code ? h('code', null, p.text) : p.text));
}

// element.textContent = text, with the backticked parts as <code>.
export function setCodeText(element: Element, text: string): void {
  mount(element, withCode(text));
}
