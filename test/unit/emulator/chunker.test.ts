import { describe, expect, it } from 'vitest';
import { chunkMarkdown, chunkText, extractChunks, MAX_CHUNK_CHARS } from '../../../packages/emulator/src/chunker.js';
import { htmlToText, odtXmlToText, rtfToText } from '../../../packages/emulator/src/text-formats.js';

describe('chunkText', () => {
  it('packs whole paragraphs into chunks of at most the limit, never empty', () => {
    const paragraphs = ['a'.repeat(400), 'b'.repeat(400), 'c'.repeat(400), '', '   ', 'd'.repeat(10)];
    const chunks = chunkText(paragraphs.join('\n\n'));
    expect(chunks).toEqual([`${'a'.repeat(400)}\n\n${'b'.repeat(400)}`, `${'c'.repeat(400)}\n\n${'d'.repeat(10)}`]);
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n \n')).toEqual([]);
  });

  it('cuts a long paragraph at line ends, then sentence ends, then spaces, keeping every word', () => {
    const sentences = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} says something.`).join(' ');
    const chunks = chunkText(sentences, 200);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(200);
      expect(c.endsWith('.')).toBe(true);
    }
    expect(chunks.join(' ')).toBe(sentences);
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i} ${'x'.repeat(20)}`).join('\n');
    expect(chunkText(lines, 100).join('\n')).toBe(lines);
  });

  it('hard-cuts a word longer than the limit without splitting a surrogate pair', () => {
    const word = `a${'😀'.repeat(600)}`; // 1201 UTF-16 units: a cut at 1000 would fall inside a pair
    const chunks = chunkText(word, MAX_CHUNK_CHARS);
    expect(chunks.join('')).toBe(word);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
      expect(c).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    }
  });
});

describe('extractChunks', () => {
  it('reads text as UTF-8 without the BOM and with Windows line ends normalised', async () => {
    const data = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Première ligne\r\n\r\nSecond — para\r\n', 'utf8')]);
    expect(await extractChunks('text', data)).toEqual({ status: 'ready', failureReason: null, chunks: ['Première ligne\n\nSecond — para'] });
  });

  it('marks a file without text, a corrupt file and a legacy .doc as failed with a reason, never throwing', async () => {
    expect(await extractChunks('text', Buffer.alloc(0))).toEqual({ status: 'failed', failureReason: 'no text found in the file', chunks: [] });
    const corrupt = await extractChunks('docx', Buffer.from('not a zip'));
    expect(corrupt.status).toBe('failed');
    expect(corrupt.failureReason).toMatch(/^text extraction failed: /);
    expect((await extractChunks('odt', Buffer.from('PK nothing'))).status).toBe('failed');
    expect((await extractChunks('pdf', Buffer.from('%PDF-1.4 garbage'))).status).toBe('failed');
    expect((await extractChunks('doc', Buffer.from('\xd0\xcf\x11\xe0'))).failureReason).toContain('.doc');
  });
});

describe('Markdown', () => {
  it('is cut at its headings: each section is its own chunk, however short', async () => {
    const md = '# Handbook\n\nIntro line.\n\n## Hours\n\nOpen at 08:00.\n\n### Fridays\nCloses at 15:00.\n\n## Travel\n\nBook ahead.\n';
    expect(await extractChunks('markdown', Buffer.from(md))).toEqual({
      status: 'ready',
      failureReason: null,
      chunks: ['# Handbook\n\nIntro line.', '## Hours\n\nOpen at 08:00.', '### Fridays\nCloses at 15:00.', '## Travel\n\nBook ahead.'],
    });
  });

  it('cuts a long section by size, never cuts at a # inside fenced code, and keeps text before the first heading', () => {
    const long = Array.from({ length: 30 }, (_, i) => `Paragraph ${i} of the long section, with enough words to count.`).join('\n\n');
    const md = `Preface.\n\n# Long\n\n${long}\n\n## Code\n\n\`\`\`sh\n# not a heading\necho hi\n\`\`\`\n`;
    const chunks = chunkMarkdown(md, 400);
    expect(chunks[0]).toBe('Preface.');
    expect(chunks[1]).toMatch(/^# Long\n\nParagraph 0 /);
    expect(chunks.at(-1)).toBe('## Code\n\n```sh\n# not a heading\necho hi\n```');
    expect(chunks.slice(1, -1).join('\n\n')).toBe(`# Long\n\n${long}`);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(400);
  });
});

describe('the service\'s pre-chunked JSON', () => {
  const doc = (hasPart: unknown): Buffer =>
    Buffer.from(JSON.stringify({ identifier: 'hb-1', title: 'Handbook', url: 'https://example.test/hb', hasPart }));

  it('gives one chunk per part, as written, skipping parts without text', async () => {
    const long = 'x'.repeat(MAX_CHUNK_CHARS + 50);
    const parts = [{ '@type': 'WebPageElement', text: 'Opening hours: 08:00 to 17:30.' }, { text: '  ' }, { text: long }];
    expect(await extractChunks('json', doc(parts))).toEqual({ status: 'ready', failureReason: null, chunks: ['Opening hours: 08:00 to 17:30.', long] });
  });

  it('marks a file that is not the format as failed, naming what is wrong', async () => {
    const reason = async (data: Buffer): Promise<string | null> => (await extractChunks('json', data)).failureReason;
    expect(await reason(Buffer.from('{"hasPart": ['))).toMatch(/^text extraction failed: the JSON file does not parse/);
    expect(await reason(Buffer.from('[1, 2]'))).toContain('not an object with identifier, title, url and hasPart');
    expect(await reason(Buffer.from('{"title": "t"}'))).toContain('no hasPart list');
    expect(await reason(doc([{ text: 'a' }, { body: 'b' }]))).toContain('hasPart[1] has no text');
    expect(await reason(doc([]))).toBe('no text found in the file');
  });
});

describe('markup to text', () => {
  it('HTML: drops head, scripts, styles and comments, breaks blocks into paragraphs, decodes entities', () => {
    const html = `<html><head><title>T</title><style>p{}</style></head><body>
      <h1>Caf&eacute; &amp; co</h1><!-- hidden --><script>alert(1)</script>
      <p>One&nbsp;two<br>three &#8212; four &#x2019;</p><ul><li>item</li></ul></body></html>`;
    expect(htmlToText(html)).toBe('Café & co\n\nOne two\nthree — four \u2019\n\nitem');
  });

  it('RTF: skips font and colour tables, decodes \\u and \\\'hh escapes, turns \\par into paragraphs', () => {
    const rtf = "{\\rtf1\\ansi{\\fonttbl{\\f0 Helvetica;}}{\\colortbl;\\red0;}{\\*\\generator x;}\n{\\pard\\b Titre\\par}{\\pard caf\\'e9 \\u8217?s \\{ok\\}\\par}}";
    expect(rtfToText(rtf)).toBe('Titre\n\ncafé \u2019s {ok}');
  });

  it('ODT: paragraphs and headings become paragraphs, <text:s/> and <text:tab/> separate words', () => {
    const xml =
      '<?xml version="1.0"?><office:document-content><office:body><office:text>' +
      '<text:h text:outline-level="1">Heading</text:h><text:p>a<text:s text:c="2"/>b<text:s/>&amp;<text:tab/>c</text:p>' +
      '</office:text></office:body></office:document-content>';
    expect(odtXmlToText(xml)).toBe('Heading\n\na b &\tc');
  });
});
