import { describe, expect, it } from 'vitest';
import { formatSse, formatSseComment, parseLastEventId } from '../../../../src/daemon/status/web/sse.js';

/** A minimal parser following the HTML spec's event-stream rules, to read back what we frame. */
function parse(stream: string): { event: string; data: string; id: string; retry?: number }[] {
  const out: { event: string; data: string; id: string; retry?: number }[] = [];
  let data: string[] = [];
  let event = '';
  let id = '';
  let retry: number | undefined;
  for (const line of stream.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length) out.push({ event: event || 'message', data: data.join('\n'), id, ...(retry === undefined ? {} : { retry }) });
      data = [];
      event = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'retry') retry = Number(value);
  }
  return out;
}

describe('SSE framing', () => {
  it('frames an event with id, name and data, ended by a blank line', () => {
    expect(formatSse({ event: 'activity', id: 7, data: '{"a":1}' })).toBe('id: 7\nevent: activity\ndata: {"a":1}\n\n');
    expect(formatSse({ data: 'x', retryMs: 2000 })).toBe('retry: 2000\ndata: x\n\n');
  });

  it('splits multi-line data into data fields that a browser joins back exactly', () => {
    const text = 'line 1\nline 2\r\nline 3\rline 4\n';
    const frame = formatSse({ event: 'x', data: text });
    expect(frame).toBe('event: x\ndata: line 1\ndata: line 2\ndata: line 3\ndata: line 4\ndata: \n\n');
    expect(parse(frame)).toEqual([{ event: 'x', data: 'line 1\nline 2\nline 3\nline 4\n', id: '' }]);
  });

  it('a file name with a newline cannot forge another event', () => {
    const evil = JSON.stringify({ path: 'a\n\nevent: status\ndata: {"forged":true}' });
    const frames = formatSse({ event: 'activity', id: 1, data: evil }) + formatSse({ event: 'activity', id: '2\nevent: status', data: 'ok' });
    const events = parse(frames);
    expect(events).toHaveLength(2);
    expect(events.map((e) => e.event)).toEqual(['activity', 'activity']);
    expect(JSON.parse(events[0]!.data)).toEqual(JSON.parse(evil));
  });

  it('comments are ignored by readers (heartbeats)', () => {
    expect(formatSseComment('ping\nx')).toBe(': ping x\n\n');
    expect(parse(formatSseComment('ping') + formatSse({ data: 'd' }))).toEqual([{ event: 'message', data: 'd', id: '' }]);
  });

  it('reads Last-Event-ID only when it is one of our sequence numbers', () => {
    expect(parseLastEventId('42')).toBe(42);
    expect(parseLastEventId(' 42 ')).toBe(42);
    expect(parseLastEventId(undefined)).toBeUndefined();
    expect(parseLastEventId('abc')).toBeUndefined();
    expect(parseLastEventId('-1')).toBeUndefined();
    expect(parseLastEventId(['5'])).toBe(5);
  });
});
