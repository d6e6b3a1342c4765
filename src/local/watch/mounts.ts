/**
 * Which filesystems a mapped folder spans, and how each is watched. PURE: the
 * text of /proc/self/mountinfo comes in, a plan comes out; only readMountInfo touches disk.
 *
 * inotify sees only changes made through this host. On a network share (NFS, SMB), a FUSE
 * filesystem (sshfs, rclone, bindfs) or anything unknown, other people's edits raise no
 * event: those mounts are polled. Local filesystems get events. A mapped folder may hold
 * mounts of its own (a local folder with a share mounted inside it): each mount below the
 * folder is classified on its own, and the deepest mount holding a path decides for it.
 */
import { readFile } from 'node:fs/promises';

export interface MountEntry {
  mountId: number;
  parentId: number;
  /** Where it is mounted (unescaped: "\040" is a space). */
  mountPoint: string;
  /** The filesystem type, with its subtype ("fuse.sshfs"). */
  fsType: string;
  /** The mount source ("//server/share", "host:/export", "/dev/sda1"). */
  source: string;
  /** The root of the mount within its filesystem ("/" unless a bind mount of a subfolder). */
  root: string;
}

export type WatchKind = 'events' | 'poll';

/** Filesystems where the kernel's inotify sees every change (they live on this host). */
const LOCAL_FS = new Set([
  'ext2', 'ext3', 'ext4', 'xfs', 'btrfs', 'tmpfs', 'zfs', 'overlay', 'overlayfs', 'f2fs', 'jfs', 'reiserfs',
  'vfat', 'exfat', 'ntfs', 'ntfs3', 'hfsplus', 'bcachefs', 'nilfs2', 'ramfs', 'squashfs', 'iso9660', 'udf', 'erofs',
]);

/** Known remote or userspace filesystems (anything neither here nor local is polled too). */
const REMOTE_FS = new Set([
  'nfs', 'nfs4', 'cifs', 'smb3', 'smbfs', 'smb2', '9p', 'ceph', 'glusterfs', 'afs', 'davfs', 'virtiofs', 'fuse', 'fuseblk',
  'lustre', 'gpfs', 'ocfs2', 'gfs2', 'beegfs', 'orangefs', 'vboxsf', 'vmhgfs', 'prl_fs',
]);

/** How a filesystem type is watched under `auto`. */
export function classifyFsType(fsType: string): { kind: WatchKind; why: string } {
  const t = fsType.toLowerCase();
  if (LOCAL_FS.has(t)) return { kind: 'events', why: `${fsType} is a local filesystem` };
  if (t.startsWith('fuse.') || t === 'fuse' || t === 'fuseblk') return { kind: 'poll', why: `${fsType} is a FUSE filesystem: changes made elsewhere raise no event` };
  if (REMOTE_FS.has(t)) return { kind: 'poll', why: `${fsType} is a network filesystem: changes made on the server raise no event` };
  return { kind: 'poll', why: `${fsType} is not known to be local: polled to be safe` };
}

/** "\040" and the other octal escapes of mountinfo (space, tab, newline, backslash). */
export function unescapeMountField(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * Parses /proc/self/mountinfo (proc(5)): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
 * /dev/root rw,errors=continue". Optional fields end at " - ". Malformed lines are skipped.
 */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    if (left.length < 6 || right.length < 2) continue;
    const mountId = Number(left[0]);
    const parentId = Number(left[1]);
    if (!Number.isInteger(mountId) || !Number.isInteger(parentId)) continue;
    out.push({ mountId, parentId, root: unescapeMountField(left[3]!), mountPoint: unescapeMountField(left[4]!), fsType: right[0]!, source: unescapeMountField(right[1]!) });
  }
  return out;
}

export interface MountPlanEntry {
  /** The mount point, absolute. */
  mountPoint: string;
  /** The part of the mapped folder it covers, relative ('' = the folder itself). */
  rel: string;
  fsType: string;
  source: string;
  kind: WatchKind;
  why: string;
}

/**
 * The mounts that hold the mapped folder `root` (absolute, symbolic links resolved) and
 * every mount below it, each with how it is watched. `mode` 'events' or 'poll' forces one
 * kind everywhere; 'auto' classifies by filesystem type. The first entry is the mount
 * holding the folder itself; a later mount mounted over the same point hides an earlier one.
 */
export function planMounts(mounts: readonly MountEntry[], root: string, mode: 'auto' | 'events' | 'poll'): MountPlanEntry[] {
  const within = (p: string, dir: string): boolean => dir === '/' || p === dir || p.startsWith(`${dir}/`);
  // The last mount on a point is the visible one (mountinfo lists in mount order).
  const visible = new Map<string, MountEntry>();
  for (const m of mounts) visible.set(m.mountPoint, m);
  let holder: MountEntry | undefined;
  for (const m of visible.values()) {
    if (within(root, m.mountPoint) && (!holder || m.mountPoint.length > holder.mountPoint.length)) holder = m;
  }
  const below = [...visible.values()].filter((m) => m.mountPoint !== root && within(m.mountPoint, root)).sort((a, b) => (a.mountPoint < b.mountPoint ? -1 : 1));
  const entries: MountPlanEntry[] = [];
  const add = (m: MountEntry, rel: string): void => {
    const c = mode === 'auto' ? classifyFsType(m.fsType) : { kind: mode, why: `watch.mode is "${mode}"` };
    entries.push({ mountPoint: m.mountPoint, rel, fsType: m.fsType, source: m.source, kind: c.kind, why: c.why });
  };
  if (holder) add(holder, '');
  else entries.push({ mountPoint: '/', rel: '', fsType: 'unknown', source: '', kind: mode === 'events' ? 'events' : 'poll', why: 'no mount found for the folder: polled to be safe' });
  for (const m of below) add(m, m.mountPoint.slice(root === '/' ? 1 : root.length + 1));
  return entries;
}

/** The plan entry deciding for a relative path: the deepest mount holding it. */
export function mountFor(plan: readonly MountPlanEntry[], rel: string): MountPlanEntry {
  let best = plan[0]!;
  for (const e of plan) if ((e.rel === '' || rel === e.rel || rel.startsWith(`${e.rel}/`)) && e.rel.length >= best.rel.length) best = e;
  return best;
}

/** Reads this process's mount table (empty text where there is none: not Linux). */
export async function readMountInfo(path = '/proc/self/mountinfo'): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * One line per mount for operators (`config check`): "/srv/share is cifs
 * (//fileserver/Public): polled every 10 s (at most 5 % of a core; longer on a large tree),
 * 48,000 files, events for this host's writes". `files`: the included files' relative
 * paths, when the folder was walked (each counted for the deepest mount holding it).
 */
export function describeMountPlan(plan: readonly MountPlanEntry[], root: string, watch: { mode: string; pollIntervalSeconds: number; pollBudgetPercent: number }, files?: readonly string[]): string[] {
  const counts = new Map<MountPlanEntry, number>();
  if (files) {
    for (const e of plan) counts.set(e, 0);
    for (const f of files) {
      const e = mountFor(plan, f);
      counts.set(e, (counts.get(e) ?? 0) + 1);
    }
  }
  return plan.map((e) => {
    const where = e.rel === '' ? root : `${root}/${e.rel}`;
    const fs = `${e.fsType}${e.source && e.source !== e.fsType ? ` (${e.source})` : ''}`;
    if (e.kind === 'events') return `${where} is ${fs}: watched by events`;
    const n = counts.get(e);
    const many = n === undefined ? '' : ` ${n.toLocaleString('en-US')} file${n === 1 ? '' : 's'},`;
    const events = watch.mode === 'poll' ? 'no events (watch.mode "poll")' : "events for this host's writes";
    return `${where} is ${fs}: polled every ${watch.pollIntervalSeconds} s (at most ${watch.pollBudgetPercent} % of a core; longer on a large tree),${many} ${events}`;
  });
}
