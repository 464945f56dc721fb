// h(): a tiny DOM builder for the views (no framework): h('td', {class: 'num'}, '42 %').
// Attributes named on* take listeners; `dataset` sets data-* attributes; false/null/undefined
// children and attributes are skipped. Text is always set as text (never parsed as HTML).

export type Child = Node | string | number | null | undefined | false | readonly Child[];

export type Attrs = {
  class?: string;
  dataset?: Record<string, string | number>;
  style?: string;
} & Record<string, unknown>;

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child as readonly Child[]) append(parent, c);
  } else if (child instanceof Node) {
    parent.appendChild(child);
  } else {
    parent.appendChild(document.createTextNode(String(child)));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'dataset' && typeof value === 'object') {
      for (const [k, v] of Object.entries(value as Record<string, string | number>)) {
        element.dataset[k] = String(v);
      }
    } else if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2).toLowerCase(), value as EventListener);
    } else if (name === 'value' && 'value' in element) {
      (element as HTMLInputElement).value = String(value);
    } else if (name === 'checked' && element instanceof HTMLInputElement) {
      element.checked = Boolean(value);
    } else {
      element.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(element, children);
  return element;
}

// Replaces all children of `parent`.
export function mount(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}
