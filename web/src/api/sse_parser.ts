// SseParser: an incremental parser of the `text/event-stream` format as the HTML standard
// defines it (section "Server-sent events", interpreting an event stream). Text arrives in
// arbitrary chunks (a line, or even a CRLF pair, may be split across reads); push() returns
// the messages completed so far.
//
// Why our own parser: EventSource cannot send an Authorization header, so the dashboard
// reads the stream with fetch() and a ReadableStream and parses it here.

export interface SseMessage {
  id: string; // the last event id seen so far ("" if none): the resume point
  event: string; // "message" when the stream named no type
  data: string;
}

export class SseParser {
  private buffer = '';
  private skipLeadingLf = false; // the previous chunk ended in CR: a LF now ends no line
  private started = false;
  private data: string[] = [];
  private eventType = '';
  private lastId = '';
  private retry: number | null = null;

  get lastEventId(): string {
    return this.lastId;
  }

  // The last `retry:` value in milliseconds, or null when the stream sent none.
  get retryMs(): number | null {
    return this.retry;
  }

  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    if (this.skipLeadingLf && text.startsWith('\n')) text = text.slice(1);
    this.skipLeadingLf = false;
    this.buffer += text;
    const messages: SseMessage[] = [];
    for (;;) {
      const end = this.buffer.search(/[\r\n]/);
      if (end < 0) break;
      const line = this.buffer.slice(0, end);
      let next = end + 1;
      if (this.buffer[end] === '\r') {
        if (next === this.buffer.length) this.skipLeadingLf = true;
        else if (this.buffer[next] === '\n') next += 1;
      }
      this.buffer = this.buffer.slice(next);
      const message = this.processLine(line);
      if (message) messages.push(message);
    }
    return messages;
  }

  private processLine(line: string): SseMessage | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null; // comment (keepalive)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    const data = this.data;
    const type = this.eventType;
    this.data = [];
    this.eventType = '';
    if (data.length === 0) return null;
    return { id: this.lastId, event: type || 'message', data: data.join('\n') };
  }
}
