/**
 * Saved e-mails to Markdown: the headers (subject as the title, from, to, cc, date), the body
 * (its plain text, or the text of its HTML), and the names of its attachments (their content
 * is not converted). .eml with postal-mime, Outlook .msg with @kenjiuno/msgreader.
 */
import msgreader from '@kenjiuno/msgreader';
import PostalMime, { type Address } from 'postal-mime';
import { htmlBlocks } from './html.js';
import type { ConvertLimits } from './limits.js';
import { limitError } from './limits.js';
import { MarkdownOut, squeeze } from './markdown.js';

/**
 * msgreader is CommonJS with its class as `exports.default`: Node's ESM import gives the
 * exports object (the class at `.default`), a bundler's interop the class itself.
 */
const MsgReader = ((msgreader as unknown as { default?: typeof msgreader.default }).default ?? msgreader) as typeof msgreader.default;

interface Mail {
  subject: string;
  headers: [string, string][];
  body: string;
  attachments: string[];
}

function toMarkdown(mail: Mail, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const out = new MarkdownOut(limits);
  out.heading(1, mail.subject === '' ? '(no subject)' : mail.subject);
  const headers = mail.headers.filter(([, v]) => v !== '').map(([k, v]) => `- **${k}:** ${squeeze(v)}`);
  if (headers.length > 0) out.add(headers.join('\n'));
  for (const p of mail.body.split(/\r?\n\s*\r?\n/)) {
    const text = p.trim();
    if (text !== '' && !out.add(text)) break;
  }
  if (mail.attachments.length > 0) {
    out.heading(2, 'Attachments');
    out.add(mail.attachments.map((a) => `- ${a}`).join('\n'));
  }
  return { markdown: out.text(), notes: out.notes };
}

/** An address as a mail client shows it: `"Name" <address>`, the address alone, or a group `Name: members;`. */
function addressText(a: Address): string {
  if (a.group !== undefined) return `${a.name}: ${a.group.map(addressText).join(', ')};`;
  return a.name === '' ? a.address : `"${a.name.replace(/(["\\])/g, '\\$1')}" <${a.address}>`;
}
const addresses = (a: Address | Address[] | undefined): string => (a === undefined ? '' : (Array.isArray(a) ? a : [a]).map(addressText).join(', '));

/** The Date header in ISO 8601 (UTC), or as written when it is not a date. */
function isoDate(date: string | undefined): string {
  const t = date === undefined ? NaN : Date.parse(date);
  return Number.isNaN(t) ? (date ?? '') : new Date(t).toISOString();
}

export async function emlToMarkdown(bytes: Uint8Array, limits: ConvertLimits): Promise<{ markdown: string; notes: string[] }> {
  // The attachments' content is not read: left undecoded as the smallest form postal-mime has.
  const parsed = await PostalMime.parse(bytes, { attachmentEncoding: 'base64' });
  const body = parsed.text ?? (parsed.html !== undefined ? htmlBlocks(parsed.html).map((b) => b.text).join('\n\n') : '');
  return toMarkdown(
    {
      subject: parsed.subject ?? '',
      headers: [
        ['From', addresses(parsed.from)],
        ['To', addresses(parsed.to)],
        ['Cc', addresses(parsed.cc)],
        ['Date', isoDate(parsed.date)],
      ],
      body,
      attachments: parsed.attachments.map((a) => a.filename ?? '(unnamed)'),
    },
    limits,
  );
}

export function msgToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  let data;
  try {
    data = new MsgReader(bytes.slice().buffer).getFileData();
  } catch (e) {
    throw limitError('format', `not a readable Outlook message (${(e as Error).message})`);
  }
  if (data.error !== undefined) throw limitError('format', `not a readable Outlook message (${data.error})`);
  const who = (name?: string, email?: string): string => (email !== undefined && email !== '' ? `${name ?? ''} <${email}>`.trim() : (name ?? ''));
  const recipients = (kind: string): string =>
    (data.recipients ?? [])
      .filter((r) => (r.recipType ?? 'to') === kind)
      .map((r) => who(r.name, r.smtpAddress ?? r.email))
      .join(', ');
  return toMarkdown(
    {
      subject: data.subject ?? '',
      headers: [
        ['From', who(data.senderName, data.senderSmtpAddress ?? data.senderEmail)],
        ['To', recipients('to')],
        ['Cc', recipients('cc')],
        ['Date', data.messageDeliveryTime ?? data.clientSubmitTime ?? ''],
      ],
      body: data.body ?? '',
      attachments: (data.attachments ?? []).map((a) => a.fileName ?? a.name ?? '(unnamed)'),
    },
    limits,
  );
}
