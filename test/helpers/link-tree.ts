/**
 * One tree of symbolic links and what a walk of it finds, built on a real disk by
 * test/integration/local/walk.test.ts and on `FakeLocal` by test/unit/local/walk.test.ts:
 * the fake's links must behave as the disk's. Paths are below a base folder; a target that
 * starts with `/` is below the base too, any other is relative to the link's folder.
 */
export const LINK_TREE = {
  /** The mapped folder, below the base. */
  root: 'root',
  files: { 'root/real/a.txt': 'a', 'root/real/sub/b.txt': 'b', 'root/top.txt': 't', 'outside/secret.txt': 'secret' } as Record<string, string>,
  links: [
    ['root/link-to-file.txt', '/root/top.txt'],
    ['root/link-to-dir', 'real'],
    ['root/link-outside', '/outside'],
    ['root/outside-file.txt', '/outside/secret.txt'],
    ['root/real/sub/loop-up', '..'],
    ['root/real/self', '.'],
    ['root/broken.txt', 'nowhere.txt'],
  ] as const,
  /** Links not followed (the default): the files, and each link skipped as a link. */
  notFollowed: {
    files: ['real/a.txt', 'real/sub/b.txt', 'top.txt'],
    skipped: [
      ['broken.txt', 'symlink'],
      ['link-outside', 'symlink'],
      ['link-to-dir', 'symlink'],
      ['link-to-file.txt', 'symlink'],
      ['outside-file.txt', 'symlink'],
      ['real/self', 'symlink'],
      ['real/sub/loop-up', 'symlink'],
    ],
  },
  /** followSymlinks: followed inside the root only, loops cut. */
  followed: {
    files: ['link-to-dir/a.txt', 'link-to-dir/sub/b.txt', 'link-to-file.txt', 'real/a.txt', 'real/sub/b.txt', 'top.txt'],
    skipped: [
      ['broken.txt', 'symlink-broken'],
      ['link-outside', 'symlink-outside-root'],
      ['link-to-dir/self', 'symlink-loop'],
      ['link-to-dir/sub/loop-up', 'symlink-loop'],
      ['outside-file.txt', 'symlink-outside-root'],
      ['real/self', 'symlink-loop'],
      ['real/sub/loop-up', 'symlink-loop'],
    ],
  },
};
