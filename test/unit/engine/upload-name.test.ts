import { describe, expect, it } from 'vitest';
import { markUploadName, nonceSession, unmarkedName, uploadNonce } from '../../../src/engine/document-fields.js';
import { findUploadMark } from '../../../src/engine/upload-mark.js';
import { cutToBytes } from '../../../src/engine/service-names.js';

describe('markUploadName: the name an upload is sent under', () => {
  it.each([
    ['report.pdf', '.dssync-upload-abc.report.dssync-upload-abc.pdf'],
    ['sub/deep/report.tar.gz', '.dssync-upload-abc.sub/deep/report.tar.dssync-upload-abc.gz'],
    ['README', '.dssync-upload-abc.README.dssync-upload-abc'],
    ['.bashrc', '.dssync-upload-abc..bashrc.dssync-upload-abc'],
    ['sub.d/Makefile', '.dssync-upload-abc.sub.d/Makefile.dssync-upload-abc'],
    ['sub/.env', '.dssync-upload-abc.sub/.env.dssync-upload-abc'],
  ])('%s → %s (marked at the start, and before the extension, which stays last)', (name, marked) => {
    expect(markUploadName(name, 'abc')).toBe(marked);
    expect(unmarkedName(marked)).toBe(name);
  });

  it('keeps its whole nonce through a service that cuts a deep path at 255 bytes or keeps the base name only (issue 34, case 6)', () => {
    const nonce = `${'a'.repeat(8)}${'b'.repeat(8)}0123abcd`;
    const deep = `${'folder-with-a-long-name/'.repeat(12)}report.pdf`;
    const marked = markUploadName(deep, nonce);
    expect(Buffer.byteLength(marked)).toBeGreaterThan(255);
    expect(findUploadMark(cutToBytes(marked, 255))).toBe(nonce);
    expect(findUploadMark(marked.slice(marked.lastIndexOf('/') + 1))).toBe(nonce);
  });

  it('a nonce cut short is nobody\'s: never taken for a late commit of ours', () => {
    const tag = 'a'.repeat(8);
    expect(nonceSession(`${tag}${'b'.repeat(8)}0123abcd`, tag)).toBe('b'.repeat(8));
    expect(nonceSession(`${tag}0123abcd`, tag)).toBe('');
    expect(nonceSession(`${tag}${'b'.repeat(8)}0123`, tag)).toBeUndefined();
    expect(nonceSession(`${tag}bb`, tag)).toBeUndefined();
  });
});

describe('uploadNonce: a fresh nonce per upload', () => {
  it('tag, session, then 8 random hex digits; 12 without a tag', () => {
    const n = uploadNonce('aaaaaaaa', 'bbbbbbbb');
    expect(n).toMatch(/^aaaaaaaabbbbbbbb[0-9a-f]{8}$/);
    expect(nonceSession(n, 'aaaaaaaa')).toBe('bbbbbbbb');
    expect(uploadNonce('aaaaaaaa')).toMatch(/^aaaaaaaa[0-9a-f]{8}$/);
    expect(uploadNonce(undefined)).toMatch(/^[0-9a-f]{12}$/);
  });

  it('never the same random digits twice over thousands of draws (the random pool drawn again ~15 times)', () => {
    // 48 random bits each: a repeat by chance in 10,000 draws has a probability under 1e-6.
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) seen.add(uploadNonce(undefined));
    expect(seen.size).toBe(10_000);
  });
});
