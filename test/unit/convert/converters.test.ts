/**
 * The converters on real office files (test/fixtures/office: written by python-docx, openpyxl,
 * odfpy and saved by LibreOffice; manifest.json lists the marker words each must carry), and
 * the structure each format's Markdown promises (docs/formats.md).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { convertBytes } from '../../../src/convert/convert.js';
import { parseDelimited } from '../../../src/convert/delimited.js';
import { formatOf } from '../../../src/convert/formats.js';
import { DEFAULT_LIMITS } from '../../../src/convert/limits.js';
import { rtfToText } from '../../../src/convert/rtf.js';
import { outlookMsg } from '../../helpers/outlook-msg.js';

const DIR = new URL('../../fixtures/office/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', DIR), 'utf8')) as Record<string, { kind: string; markers: string[] }>;
const read = (f: string): Buffer => readFileSync(new URL(f, DIR));

async function markdownOf(file: string, limits = DEFAULT_LIMITS): Promise<{ markdown: string; notes: string[] }> {
  const converter = formatOf(file)?.format.converter;
  if (converter === undefined) throw new Error(`${file}: no converter`);
  return convertBytes(converter, read(file), limits);
}

describe('every fixture the service cannot read is converted with its marker words', () => {
  const convertible = Object.entries(manifest).filter(([f, m]) => m.kind === 'convert' && formatOf(f)?.format.policy === 'convert');
  it('covers every convertible fixture', () => expect(convertible.length).toBeGreaterThanOrEqual(11));
  for (const [file, { markers }] of convertible) {
    it(file, async () => {
      const { markdown } = await markdownOf(file);
      for (const m of markers) expect(markdown, `${file} lacks ${m}`).toContain(m);
    });
  }
});

it('the formats the service reads go as they are; .xls is skipped with its reason', () => {
  for (const f of ['a.pdf', 'b.DOCX', 'c.txt', 'd.html', 'e.md']) expect(formatOf(f)?.format.policy, f).toBe('as-is');
  expect(formatOf('old.xls')?.format).toMatchObject({ policy: 'skip', reason: expect.stringContaining('.xlsx') });
  expect(formatOf('x.unknown')).toBeUndefined();
});

it('slides: one section per slide, in order, titled by their number', async () => {
  const { markdown } = await markdownOf('sales/deck.pptx');
  expect(markdown.indexOf('## Slide 1')).toBeLessThan(markdown.indexOf('## Slide 2'));
  expect(markdown.indexOf('kwslideonex')).toBeLessThan(markdown.indexOf('## Slide 2'));
  expect(markdown.indexOf('kwslidetwox')).toBeGreaterThan(markdown.indexOf('## Slide 2'));
});

it('sheets: one section per sheet with a Markdown table, the value of a formula cell not its formula', async () => {
  const { markdown } = await markdownOf('finance/budget.xlsx');
  expect(markdown).toMatch(/## Sheet: Budget\n\n\| line \| amount \|\n\| --- \| --- \|\n\| travel kwsheetonex \| 1200 \|/);
  expect(markdown).toContain('## Sheet: Staff');
  expect(markdown).not.toContain('SUM(');
});

it('a sheet past rowsPerSheet is cut, and the cut is named in the text and the notes', async () => {
  const csv = Buffer.from(['a,b', ...Array.from({ length: 50 }, (_, i) => `row${i},${i}`)].join('\n'));
  const r = await convertBytes('csv', csv, { ...DEFAULT_LIMITS, rowsPerSheet: 10 });
  expect(r.markdown).toContain('row9');
  expect(r.markdown).not.toContain('row10');
  expect(r.notes).toEqual(['the table: 50 rows, the first 10 shown (limit rowsPerSheet)']);
  expect(r.markdown).toContain('(limit rowsPerSheet)');
});

it('the Markdown stops at outputBytes and says so', async () => {
  const csv = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n'));
  const r = await convertBytes('rtf', Buffer.from(`{\\rtf1 ${csv.toString().replace(/\n/g, '\\par ')}}`), { ...DEFAULT_LIMITS, outputBytes: 1000 });
  expect(Buffer.byteLength(r.markdown)).toBeLessThan(1200);
  expect(r.notes[0]).toMatch(/cut at \d+ bytes \(limit outputBytes, 1000\)/);
});

it('mails: subject as title, headers, body, attachment names', async () => {
  const eml = Buffer.from(
    [
      'From: Ada <ada@example.org>',
      'To: Bob <bob@example.org>',
      'Subject: Budget kwsubj',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Hello kwbody',
      '--b',
      'Content-Type: application/pdf; name="q3.pdf"',
      'Content-Disposition: attachment; filename="q3.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      'JVBERi0=',
      '--b--',
      '',
    ].join('\r\n'),
  );
  const { markdown } = await convertBytes('eml', eml, DEFAULT_LIMITS);
  expect(markdown).toMatch(/^# Budget kwsubj\n/);
  expect(markdown).toContain('- **From:** "Ada" <ada@example.org>');
  expect(markdown).toContain('- **To:** "Bob" <bob@example.org>');
  expect(markdown).toContain('Hello kwbody');
  expect(markdown).toMatch(/## Attachments\n\n- q3\.pdf/);
});

it('an Outlook .msg gives its subject, sender, recipients, body, and names its attachments', async () => {
  const msg = outlookMsg({
    subject: 'Quarterly kwmsgsubjectx',
    body: 'Hello team,\r\nthe figures kwmsgbodyx are in.',
    from: { name: 'Alice Example', email: 'alice@example.com' },
    to: [{ name: 'Bob Example', email: 'bob@example.com' }],
    attachments: [{ name: 'budget kwmsgattachx.xlsx', data: Buffer.from('PK') }],
  });
  const { markdown } = await convertBytes('msg', msg, DEFAULT_LIMITS);
  expect(markdown).toMatch(/^# Quarterly kwmsgsubjectx\n/);
  expect(markdown).toContain('- **From:** Alice Example <alice@example.com>');
  expect(markdown).toContain('- **To:** Bob Example <bob@example.com>');
  expect(markdown).toContain('the figures kwmsgbodyx are in.');
  expect(markdown).toMatch(/## Attachments\n\n- budget kwmsgattachx\.xlsx/);
});

it('a file named .msg that is no compound file is refused with its reason', async () => {
  await expect(convertBytes('msg', Buffer.from('not an Outlook message'), DEFAULT_LIMITS)).rejects.toThrow(/not a readable Outlook message/);
});

it('CSV quoting: delimiters, doubled quotes and line breaks inside quotes', () => {
  expect(parseDelimited('a,"b,c","say ""hi""","x\ny"\n1,2,3,4', ',', 10).rows).toEqual([
    ['a', 'b,c', 'say "hi"', 'x\ny'],
    ['1', '2', '3', '4'],
  ]);
});

it('RTF: tables of fonts and document info skipped, escapes and Unicode decoded', () => {
  const rtf = "{\\rtf1\\ansi\\ansicpg1252{\\fonttbl{\\f0 Arial;}}{\\info{\\title Secret}}{\\*\\generator X;}caf\\'e9 \\u8364?\\par next}";
  expect(rtfToText(rtf)).toBe('café €\nnext');
});

it('mails: encoded words, a Latin-1 quoted-printable body, an RFC 2231 attachment name, an address group', async () => {
  const eml = Buffer.from(
    [
      'From: =?ISO-8859-1?Q?Andr=E9_M=FCller?= <andre@example.org>',
      'To: "Smith, Jane" <jane@example.org>, bob@example.org',
      'Cc: Team: a@example.org, b@example.org;',
      'Subject: =?UTF-8?B?UsOpdW5pb24gZCfDqXF1aXBl?=',
      'Date: Tue, 3 Nov 2026 09:15:00 +0100',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="o"',
      '',
      '--o',
      'Content-Type: text/plain; charset=iso-8859-1',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'Caf=E9 cr=E8me kwlatin, coup=',
      '=E9 en deux.',
      '--o',
      "Content-Disposition: attachment; filename*=UTF-8''Bilan%20%C3%A9t%C3%A9.xlsx",
      'Content-Transfer-Encoding: base64',
      '',
      'UEsDBA==',
      '--o--',
      '',
    ].join('\r\n'),
  );
  const { markdown } = await convertBytes('eml', eml, DEFAULT_LIMITS);
  expect(markdown).toMatch(/^# Réunion d'équipe\n/);
  expect(markdown).toContain('- **From:** "André Müller" <andre@example.org>');
  expect(markdown).toContain('- **To:** "Smith, Jane" <jane@example.org>, bob@example.org');
  expect(markdown).toContain('- **Cc:** Team: a@example.org, b@example.org;');
  expect(markdown).toContain('- **Date:** 2026-11-03T08:15:00.000Z');
  expect(markdown).toContain('Café crème kwlatin, coupé en deux.');
  expect(markdown).toMatch(/## Attachments\n\n- Bilan été\.xlsx/);
});
