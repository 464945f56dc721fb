// findJsonSyntaxError(): where a text stops being JSON (RFC 8259) and why, as a character
// offset and a short reason. JSON.parse's messages cannot serve here: V8 names no position
// for an unexpected token ("Unexpected token 'a', "name: x" is not valid JSON"), and each
// browser words its errors differently. This scanner checks syntax only (it builds no
// value) so forms can say "line 3, column 12: expected ',' or '}' after a property value"
// in the same words everywhere. Pure; no DOM.

export interface JsonSyntaxError {
  position: number; // 0-based offset of the offending character (text.length at the end)
  reason: string;
}

const MAX_DEPTH = 512; // deeper nesting is left to JSON.parse (no stack overflow here)

class Fail {
  constructor(readonly error: JsonSyntaxError) {}
}

class Scanner {
  private pos = 0;
  constructor(private readonly text: string) {}

  check(): JsonSyntaxError | null {
    try {
      this.skipSpace();
      if (this.pos >= this.text.length) this.fail('the text is empty: expected a JSON value');
      this.value(0);
      this.skipSpace();
      if (this.pos < this.text.length) this.fail('unexpected text after the end of the JSON value');
      return null;
    } catch (e) {
      if (e instanceof Fail) return e.error;
      throw e;
    }
  }

  private fail(reason: string, at = this.pos): never {
    throw new Fail({ position: at, reason });
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos] as string)) this.pos++;
  }

  // What to say when a value was expected: the end, a single-quoted string, or else.
  private expectedValue(): never {
    const c = this.peek();
    if (c === undefined) this.fail('the text ends where a value was expected');
    if (c === "'") this.fail('JSON strings use double quotes (")');
    this.fail(`expected a value (object, array, "string", number, true, false or null), found ${JSON.stringify(c)}`);
  }

  private value(depth: number): void {
    if (depth > MAX_DEPTH) throw new Fail({ position: -1, reason: 'too deep' });
    const c = this.peek();
    if (c === '{') this.object(depth);
    else if (c === '[') this.array(depth);
    else if (c === '"') this.string();
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) this.number();
    else if (!this.literal('true') && !this.literal('false') && !this.literal('null')) this.expectedValue();
  }

  private literal(word: string): boolean {
    if (!this.text.startsWith(word, this.pos)) return false;
    this.pos += word.length;
    return true;
  }

  // Members or elements separated by commas up to `close`; `item` reads one.
  private sequence(close: '}' | ']', what: string, item: () => void): void {
    this.pos++; // the opening bracket
    this.skipSpace();
    if (this.peek() === close) {
      this.pos++;
      return;
    }
    for (;;) {
      this.skipSpace();
      if (this.peek() === close) this.fail(`a trailing comma before '${close}' is not allowed in JSON`);
      item();
      this.skipSpace();
      const c = this.peek();
      if (c === ',') {
        this.pos++;
      } else if (c === close) {
        this.pos++;
        return;
      } else {
        this.fail(c === undefined ? `the text ends inside ${what}: expected ',' or '${close}'`
          : `expected ',' or '${close}' after ${what === 'an object' ? 'a property value' : 'an array element'}`);
      }
    }
  }

  private object(depth: number): void {
    this.sequence('}', 'an object', () => {
      const c = this.peek();
      if (c !== '"') {
        this.fail(c === undefined ? 'the text ends inside an object: expected a property name'
          : c === "'" ? 'property names use double quotes (")' : 'expected a property name in double quotes');
      }
      this.string();
      this.skipSpace();
      if (this.peek() !== ':') this.fail("expected ':' after the property name");
      this.pos++;
      this.skipSpace();
      this.value(depth + 1);
    });
  }

  private array(depth: number): void {
    this.sequence(']', 'an array', () => this.value(depth + 1));
  }

  private string(): void {
    const start = this.pos;
    this.pos++; // the opening quote
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('a string is not closed (missing ")', start);
      if (c === '"') {
        this.pos++;
        return;
      }
      if (c < ' ') this.fail(c === '\n' ? 'a string may not span lines (write \\n for a line break)' : 'a control character must be escaped in a string');
      if (c === '\\') {
        const e = this.text[this.pos + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.pos + 2, this.pos + 6))) this.fail('\\u needs four hex digits');
          this.pos += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) this.fail(`invalid escape \\${e ?? ''} in a string`);
        this.pos += 2;
        continue;
      }
      this.pos++;
    }
  }

  private number(): void {
    const pattern = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
    pattern.lastIndex = this.pos;
    const match = pattern.exec(this.text);
    if (!match) this.fail('invalid number: expected a digit');
    this.pos += match[0].length;
    const next = this.peek();
    if (next !== undefined && /[0-9.eE+\-xXa-zA-Z_]/.test(next)) this.fail('invalid number (JSON numbers are decimal, without leading zeros)');
  }
}

// The first syntax error in `text`, or null when it is JSON (or nested too deep to check
// here; JSON.parse still decides then).
export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  const error = new Scanner(text).check();
  return error && error.position >= 0 ? error : null;
}

// 1-based line and column of character offset `position` in `text`.
export function lineColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(position, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1] ?? '').length + 1 };
}
