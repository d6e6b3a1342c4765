/**
 * An Outlook .msg file as Outlook stores one: a compound file (CFB, written by SheetJS's
 * cfb) holding the message's properties as `__substg1.0_<tag><type>` streams (UTF-16
 * strings, binary data), one storage per recipient and per attachment ([MS-OXMSG]). No
 * library on the registry writes .msg files, and no fixture of a real mailbox may be
 * shared: this builds them for the tests.
 */
import CFB from 'cfb';

export interface OutlookMessage {
  subject: string;
  body: string;
  from: { name: string; email: string };
  to: { name: string; email: string }[];
  attachments: { name: string; data: Buffer }[];
}

export function outlookMsg(m: OutlookMessage): Buffer {
  const cfb = CFB.utils.cfb_new();
  const text = (s: string): Buffer => Buffer.from(s, 'utf16le');
  const add = (path: string, data: Buffer): void => void CFB.utils.cfb_add(cfb, path, data);
  add('/__substg1.0_0037001F', text(m.subject)); // PR_SUBJECT
  add('/__substg1.0_1000001F', text(m.body)); // PR_BODY
  add('/__substg1.0_0C1A001F', text(m.from.name)); // PR_SENDER_NAME
  add('/__substg1.0_5D01001F', text(m.from.email)); // PR_SENDER_SMTP_ADDRESS
  add('/__properties_version1.0', Buffer.alloc(32));
  m.to.forEach((r, i) => {
    const at = `/__recip_version1.0_#${i.toString(16).toUpperCase().padStart(8, '0')}`;
    add(`${at}/__substg1.0_3001001F`, text(r.name)); // PR_DISPLAY_NAME
    add(`${at}/__substg1.0_39FE001F`, text(r.email)); // PR_SMTP_ADDRESS
    add(`${at}/__properties_version1.0`, Buffer.alloc(8));
  });
  m.attachments.forEach((a, i) => {
    const at = `/__attach_version1.0_#${i.toString(16).toUpperCase().padStart(8, '0')}`;
    add(`${at}/__substg1.0_3707001F`, text(a.name)); // PR_ATTACH_LONG_FILENAME
    add(`${at}/__substg1.0_37010102`, a.data); // PR_ATTACH_DATA_BIN
    add(`${at}/__properties_version1.0`, Buffer.alloc(8));
  });
  CFB.utils.cfb_del(cfb, '/\u0001Sh33tJ5'); // the writer's placeholder stream
  return CFB.write(cfb, { type: 'buffer' }) as Buffer;
}
