import { describe, expect, it } from 'vitest';
import { markUploadName } from '../../../src/engine/document-fields.js';

describe('markUploadName: the name an upload is sent under', () => {
  it.each([
    ['report.pdf', 'report.dssync-upload-abc.pdf'],
    ['sub/deep/report.tar.gz', 'sub/deep/report.tar.dssync-upload-abc.gz'],
    ['README', 'README.dssync-upload-abc'],
    ['.bashrc', '.bashrc.dssync-upload-abc'],
    ['sub.d/Makefile', 'sub.d/Makefile.dssync-upload-abc'],
    ['sub/.env', 'sub/.env.dssync-upload-abc'],
  ])('%s → %s (the extension stays last)', (name, marked) => {
    expect(markUploadName(name, 'abc')).toBe(marked);
  });
});
