/**
 * The mark and nonce in a document's name: `.dssync-upload-<nonce>`, the first one when
 * there are several (ours starts the name; a cut can shorten only the later one). Found
 * wherever it sits, so that a name the service rewrote around it — a backslash dropped as a
 * quoted-string escape, the folder cut off, the end cut off, spaces trimmed, lower-cased,
 * Unicode normalised — is still recognised: the mark and the nonce are plain ASCII, which
 * none of those rewritings touch. The nonce in lower case.
 */
export function findUploadMark(name: string): string | undefined {
  const m = UPLOAD_MARK_RE.exec(name);
  return m === null ? undefined : m[1]!.toLowerCase();
}
const UPLOAD_MARK_RE = /\.dssync-upload-([0-9a-z]{1,64})/i;
