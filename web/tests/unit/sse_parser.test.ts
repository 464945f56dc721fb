import { describe, expect, it } from 'vitest';
import { SseParser, type SseMessage } from '../../src/api/sse_parser';

function parseAll(chunks: string[]): { messages: SseMessage[]; parser: SseParser } {
  const parser = new SseParser();
  const messages = chunks.flatMap((c) => parser.push(c));
  return { messages, parser };
}

describe('SseParser', () => {
  it('parses the daemon\'s event format', () => {
    const { messages, parser } = parseAll([
      'id: 41\nevent: decision\ndata: {"id":41}\n\n',
      'id: 42\nevent: replica_ready\ndata: {"id":42}\n\n',
    ]);
    expect(messages).toEqual([
      { id: '41', event: 'decision', data: '{"id":41}' },
      { id: '42', event: 'replica_ready', data: '{"id":42}' },
    ]);
    expect(parser.lastEventId).toBe('42');
  });

  it('joins messages split across chunks at any byte', () => {
    const text = 'id: 7\nevent: decision\ndata: {"a":1}\n\n: keepalive\n\nid: 8\ndata: x\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      const { messages } = parseAll([text.slice(0, cut), text.slice(cut)]);
      expect(messages.map((m) => m.id)).toEqual(['7', '8']);
    }
  });

  it('accepts CRLF and CR line endings, including a CRLF split between chunks', () => {
    const { messages } = parseAll(['data: a\r', '\n\r', '\ndata: b\r\rdata: c\n\n']);
    expect(messages.map((m) => m.data)).toEqual(['a', 'b', 'c']);
  });

  it('ignores comments, unknown fields and dispatches nothing without data', () => {
    const { messages, parser } = parseAll([': keepalive\n\nid: 5\n\nfoo: bar\nevent: x\n\n']);
    expect(messages).toEqual([]);
    expect(parser.lastEventId).toBe('5'); // an id without data still moves the resume point
  });

  it('joins multi-line data and strips one leading space only', () => {
    const { messages } = parseAll(['data:  two spaces\ndata:none\ndata\n\n']);
    expect(messages[0]?.data).toBe(' two spaces\nnone\n');
    expect(messages[0]?.event).toBe('message');
  });

  it('reads retry, ignores ids with NUL and strips a leading BOM', () => {
    const { messages, parser } = parseAll(['\uFEFFretry: 2500\nid: 3\n', 'id: bad\0id\ndata: d\n\n']);
    expect(parser.retryMs).toBe(2500);
    expect(messages).toEqual([{ id: '3', event: 'message', data: 'd' }]);
  });

  it('gives an id-less message (the daemon\'s gateway_stats) the last id, and keeps the resume point', () => {
    const { messages, parser } = parseAll([
      'event: gateway_stats\ndata: {"services":{}}\n\n', // before any id: none to resume from
      'id: 12\nevent: decision\ndata: {"id":12}\n\n',
      'event: gateway_stats\ndata: {"services":{"demo":{}}}\n\n',
    ]);
    expect(messages).toEqual([
      { id: '', event: 'gateway_stats', data: '{"services":{}}' },
      { id: '12', event: 'decision', data: '{"id":12}' },
      { id: '12', event: 'gateway_stats', data: '{"services":{"demo":{}}}' },
    ]);
    expect(parser.lastEventId).toBe('12');
  });

  it('does not dispatch an unterminated message', () => {
    const { messages } = parseAll(['id: 1\ndata: partial\n']);
    expect(messages).toEqual([]);
  });
});
