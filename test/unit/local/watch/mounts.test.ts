/**
 * Mount classification from recorded /proc/self/mountinfo lines (issue 12): which parts of a
 * mapped folder get events and which are polled.
 */
import { describe, expect, it } from 'vitest';
import { classifyFsType, describeMountPlan, mountFor, parseMountInfo, planMounts, unescapeMountField } from '../../../../src/local/watch/mounts.js';

/** Recorded on a Debian host (the first lines), plus shares and FUSE mounts seen in the field. */
const MOUNTINFO = [
  '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard',
  '24 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683620k',
  '41 26 0:38 / /tmp/bt/mnt rw,nosuid,nodev,relatime - fuse /tmp/bt/back rw,user_id=0,group_id=0,default_permissions,allow_other',
  '50 26 0:45 / /srv/share rw,relatime shared:30 - cifs //fileserver/Public rw,vers=3.1.1,cache=strict,username=svc',
  '51 26 0:46 / /srv/local rw,relatime - xfs /dev/sdb1 rw,attr2,inode64',
  '52 51 0:47 / /srv/local/projects/nas rw,relatime - nfs4 nas.example.com:/export/projects rw,vers=4.2',
  '53 51 0:48 / /srv/local/remote\\040docs rw,relatime - fuse.sshfs alice@host:/docs rw,user_id=0',
  '54 26 254:0 /srv/data/team /mnt/team\\040share rw,relatime - ext4 /dev/vda rw',
  '55 51 0:49 / /srv/local/tmp rw - tmpfs tmpfs rw',
  '56 26 0:50 / /mnt/odd rw - weirdfs something rw',
].join('\n');

describe('parseMountInfo', () => {
  const mounts = parseMountInfo(MOUNTINFO);

  it('reads every line: ids, mount point, type and source, optional fields skipped', () => {
    expect(mounts).toHaveLength(10);
    expect(mounts[3]).toEqual({ mountId: 50, parentId: 26, root: '/', mountPoint: '/srv/share', fsType: 'cifs', source: '//fileserver/Public' });
  });

  it('unescapes spaces (\\040) in mount points and bind-mount roots', () => {
    expect(mounts.find((m) => m.mountId === 53)!.mountPoint).toBe('/srv/local/remote docs');
    expect(mounts.find((m) => m.mountId === 54)).toMatchObject({ root: '/srv/data/team', mountPoint: '/mnt/team share', fsType: 'ext4' });
    expect(unescapeMountField('a\\011b\\134c\\012')).toBe('a\tb\\c\n');
  });

  it('skips malformed lines instead of failing', () => {
    expect(parseMountInfo('garbage\n\n12 x 0:1 / /a rw - ext4 d rw\n1 0 0:1 / / rw - ext4 /dev/x rw')).toHaveLength(1);
  });
});

describe('classifyFsType', () => {
  it.each([
    ['ext4', 'events'], ['xfs', 'events'], ['btrfs', 'events'], ['tmpfs', 'events'], ['zfs', 'events'], ['overlay', 'events'],
    ['nfs', 'poll'], ['nfs4', 'poll'], ['cifs', 'poll'], ['smb3', 'poll'], ['smbfs', 'poll'], ['fuse', 'poll'], ['fuse.sshfs', 'poll'],
    ['fuse.rclone', 'poll'], ['9p', 'poll'], ['ceph', 'poll'], ['glusterfs', 'poll'], ['afs', 'poll'], ['davfs', 'poll'], ['virtiofs', 'poll'],
    ['weirdfs', 'poll'],
  ])('%s -> %s', (fs, kind) => {
    expect(classifyFsType(fs).kind).toBe(kind);
  });
});

describe('planMounts', () => {
  const mounts = parseMountInfo(MOUNTINFO);

  it('a folder on a CIFS share is polled, saying why', () => {
    expect(planMounts(mounts, '/srv/share/handbook', 'auto')).toEqual([
      { mountPoint: '/srv/share', rel: '', fsType: 'cifs', source: '//fileserver/Public', kind: 'poll', why: expect.stringContaining('network filesystem') },
    ]);
  });

  it('a bindfs (FUSE) mount is polled', () => {
    expect(planMounts(mounts, '/tmp/bt/mnt', 'auto').map((e) => [e.rel, e.kind])).toEqual([['', 'poll']]);
  });

  it('a local folder with network and FUSE mounts inside: events at the top, polling below', () => {
    const plan = planMounts(mounts, '/srv/local', 'auto');
    expect(plan.map((e) => [e.rel, e.fsType, e.kind])).toEqual([
      ['', 'xfs', 'events'],
      ['projects/nas', 'nfs4', 'poll'],
      ['remote docs', 'fuse.sshfs', 'poll'],
      ['tmp', 'tmpfs', 'events'],
    ]);
    expect(mountFor(plan, 'projects/nas/2024/a.pdf').fsType).toBe('nfs4');
    expect(mountFor(plan, 'projects/nasty.pdf').fsType).toBe('xfs');
    expect(mountFor(plan, 'remote docs/x.txt').kind).toBe('poll');
    expect(mountFor(plan, 'readme.txt').kind).toBe('events');
  });

  it('a bind mount of a local folder (a root other than "/") is local', () => {
    expect(planMounts(mounts, '/mnt/team share/docs', 'auto')[0]).toMatchObject({ mountPoint: '/mnt/team share', fsType: 'ext4', kind: 'events' });
  });

  it('a later mount over the same point hides the earlier one', () => {
    const over = parseMountInfo(`${MOUNTINFO}\n60 50 0:60 / /srv/share rw - fuse.rclone remote: rw`);
    expect(planMounts(over, '/srv/share', 'auto')[0]).toMatchObject({ fsType: 'fuse.rclone', kind: 'poll' });
  });

  it('an unknown filesystem and an empty mount table are polled', () => {
    expect(planMounts(mounts, '/mnt/odd/x', 'auto')[0]!.kind).toBe('poll');
    expect(planMounts([], '/anything', 'auto')[0]!.kind).toBe('poll');
  });

  it('watch.mode "events" / "poll" forces one kind on every mount', () => {
    expect(planMounts(mounts, '/srv/local', 'poll').every((e) => e.kind === 'poll')).toBe(true);
    expect(planMounts(mounts, '/srv/share', 'events').every((e) => e.kind === 'events')).toBe(true);
  });
});

describe('describeMountPlan', () => {
  it('says per mount how it is watched, as config check prints it', () => {
    const plan = planMounts(parseMountInfo(MOUNTINFO), '/srv/local', 'auto');
    const lines = describeMountPlan(plan, '/srv/local', { mode: 'auto', pollIntervalSeconds: 10, pollBudgetPercent: 5 });
    expect(lines[0]).toBe('/srv/local is xfs (/dev/sdb1): watched by events');
    expect(lines[1]).toBe("/srv/local/projects/nas is nfs4 (nas.example.com:/export/projects): polled every 10 s (at most 5 % of a core; longer on a large tree), events for this host's writes");
  });

  it('counts the files each polled mount holds, when the folder was walked', () => {
    const plan = planMounts(parseMountInfo(MOUNTINFO), '/srv/local', 'auto');
    const files = ['a.txt', 'projects/b.txt', 'projects/nas/c.txt', 'projects/nas/d/e.txt', 'projects/nasty.txt'];
    const lines = describeMountPlan(plan, '/srv/local', { mode: 'poll', pollIntervalSeconds: 30, pollBudgetPercent: 20 }, files);
    expect(lines[1]).toBe('/srv/local/projects/nas is nfs4 (nas.example.com:/export/projects): polled every 30 s (at most 20 % of a core; longer on a large tree), 2 files, no events (watch.mode "poll")');
  });
});
