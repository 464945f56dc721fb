import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { unreachableError } from '../../src/api/errors';
import { codeParts } from '../../src/ui/code_text';
import { emptyState, errorState } from '../../src/ui/states';
import { NO_TASKS_HINT } from '../../src/views/tasks_model';
import { YAML_HINT } from '../../src/views/task_actions_model';

// Just enough of the DOM for h() and mount() (the unit tests run in Node): elements with
// children, text nodes, attributes and textContent.
class FakeNode {
  childNodes: FakeNode[] = [];
  appendChild(child: FakeNode): FakeNode {
    this.childNodes.push(child);
    return child;
  }
  replaceChildren(...children: FakeNode[]): void {
    this.childNodes = children;
  }
  get textContent(): string {
    return this.childNodes.map((c) => c.textContent).join('');
  }
}

class FakeText extends FakeNode {
  constructor(readonly data: string) {
    super();
  }
  override get textContent(): string {
    return this.data;
  }
}

class FakeElement extends FakeNode {
  readonly dataset: Record<string, string> = {};
  readonly attributes = new Map<string, string>();
  constructor(readonly tagName: string) {
    super();
  }
  setAttribute(name: string, value: string): void {
    this.attributes.set(name, value);
  }
  addEventListener(): void {}
}

function elements(node: FakeNode, tag: string): FakeElement[] {
  return node.childNodes.flatMap((c) => [
    ...(c instanceof FakeElement && c.tagName === tag ? [c] : []), ...elements(c, tag)]);
}

describe('backticks in messages', () => {
  it('splits a text into plain parts and <code> parts, dropping the backticks', () => {
    expect(codeParts('Submit one with `gpuscale task submit FILE` (examples in examples/tasks/).')).toEqual([
      { text: 'Submit one with ', code: false },
      { text: 'gpuscale task submit FILE', code: true },
      { text: ' (examples in examples/tasks/).', code: false },
    ]);
    expect(codeParts('`a` and `b`')).toEqual([
      { text: 'a', code: true }, { text: ' and ', code: false }, { text: 'b', code: true }]);
    expect(codeParts('no code here')).toEqual([{ text: 'no code here', code: false }]);
    expect(codeParts('a lone ` stays')).toEqual([{ text: 'a lone ` stays', code: false }]);
    expect(codeParts('`x` then a lone `')).toEqual([{ text: 'x', code: true }, { text: ' then a lone `', code: false }]);
    expect(codeParts('empty `` pair')).toEqual([{ text: 'empty  pair', code: false }]);
    expect(codeParts('')).toEqual([]);
  });

  it('leaves no backtick in the tasks view\'s hints', () => {
    for (const hint of [NO_TASKS_HINT, YAML_HINT]) {
      const parts = codeParts(hint);
      expect(parts.filter((p) => p.code).map((p) => p.text)).toEqual(['gpuscale task submit FILE']);
      expect(parts.map((p) => p.text).join('')).not.toContain('`');
    }
  });

  describe('in the DOM', () => {
    beforeEach(() => {
      vi.stubGlobal('Node', FakeNode);
      vi.stubGlobal('document', {
        createElement: (tag: string) => new FakeElement(tag),
        createTextNode: (text: string) => new FakeText(text),
      });
    });
    afterEach(() => {
      vi.unstubAllGlobals();
    });

    it('shows the tasks view\'s empty state with the command as <code>, not in backticks', () => {
      const state = emptyState('No tasks yet.', NO_TASKS_HINT) as unknown as FakeElement;
      expect(state.textContent).not.toContain('`');
      expect(state.textContent).toContain('Submit one with gpuscale task submit FILE (examples');
      expect(elements(state, 'code').map((c) => c.textContent)).toEqual(['gpuscale task submit FILE']);
    });

    it('shows an unreachable daemon\'s message and hint with <code>', () => {
      const error = unreachableError('http://127.0.0.1:8080', new Error('connection refused'));
      const state = errorState('tasks', error) as unknown as FakeElement;
      expect(state.textContent).not.toContain('`');
      expect(elements(state, 'code').map((c) => c.textContent))
        .toEqual(['gpuscale serve', 'gpuscale serve --config gpuscale.yaml']);
    });
  });
});
