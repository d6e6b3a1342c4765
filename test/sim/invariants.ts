/**
 * What must hold after every history, once quiet (docs/reliability.md, "The simulation").
 *
 * 1. The daemon alone, with no restart and no periodic rescan, converges within a bounded
 *    time and number of passes: its data source holds exactly one document of ours per
 *    included file, with the file's content (not checked when someone deleted or renamed
 *    one of our documents, which only a full pass can see, or when the guard stopped a pass).
 * 2. The App never read a partial file: no upload of any pass (incremental or full) holds a
 *    state a slow writer's file went through before its last write.
 * 3. The mass-delete guard kept its promise over its sliding window (world.ts onPlan).
 * 4. After a restart (and the operator's --allow-mass-delete if the guard stopped a pass):
 *    the documents of ours equal the folder's included files (name and content hash), one
 *    per path; a file too large or unreadable keeps at most its old document; every
 *    person's document is untouched unless prune is "all"; another installation's always;
 *    no other document exists (no duplicate, no orphan of a lost or late upload).
 */
import { expect } from 'vitest';
import { documentName, markUploadName, nonceSession, uploadTag } from '../../src/engine/document-fields.js';
import { findUploadMark } from '../../src/engine/upload-mark.js';
import { SHARE, type Doc } from './fake-service.js';
import { isLeaseDocument } from '../../src/engine/lease-view.js';
import { storedName } from '../../src/engine/service-names.js';
import { INTENT_SETTLE_MS } from '../../src/engine/mirror.js';
import { FLAGS } from './commands.js';
import { MAPPING_ID, type World } from './world.js';

/** Quiet time the daemon gets to converge on its own (fake clock). */
export const QUIET_MS = 10 * 60_000;
/** Passes it may take meanwhile. */
export const QUIET_PASSES = 12;

function oursByPath(w: World): Map<string, { id: string; name: string; content: string }[]> {
  const out = new Map<string, { id: string; name: string; content: string }[]>();
  for (const d of w.service.docs_()) {
    if (d.metadata['dssync_installation'] !== w.installationId || w.clones.has(d.id)) continue;
    const path = String(d.metadata['dssync_path']);
    const list = out.get(path) ?? [];
    list.push({ id: d.id, name: d.name, content: d.content });
    out.set(path, list);
  }
  return out;
}

function mirrorProblems(w: World, names: boolean): string[] {
  const { files, kept } = w.expected();
  const ours = oursByPath(w);
  // Another installation's document of this mapping id with a file's path and content: the
  // upload is held rather than duplicated (docs/reliability.md, "Identity"; `dssync adopt`).
  // A former id of ours is no other installation: its documents are re-marked, never holding.
  const known = w.knownIds();
  const held = new Set(
    w.service
      .docs_()
      .filter((d) => d.metadata['dssync_installation'] !== undefined && !known.has(String(d.metadata['dssync_installation'])) && !w.mustKnow.has(String(d.metadata['dssync_installation'])))
      .map((d) => `${String(d.metadata['dssync_path'])}\0${d.content}`),
  );
  const problems: string[] = [];
  for (const [path, content] of files) {
    const docs = ours.get(path) ?? [];
    if (docs.length === 0 && held.has(`${path}\0${content}`)) continue;
    if (docs.length === 0) problems.push(`lost: ${path} has no document`);
    else if (docs.length > 1) problems.push(`duplicates: ${path} has ${docs.length} documents`);
    else if (docs[0]!.content !== content) problems.push(`stale: ${path}'s document ${docs[0]!.id} holds other content`);
    else if (names && !w.service.variant.renamesIgnored && docs[0]!.name !== storedName(path, w.service.variant.nameRule)) problems.push(`misnamed: ${path}'s document ${docs[0]!.id} is named ${docs[0]!.name}`);
  }
  for (const [path, docs] of ours) {
    if (files.has(path)) continue;
    if (kept.has(path) && docs.length <= 1) continue;
    problems.push(`orphan: ${docs.length} document(s) of ours for ${path}, which is not an included file${kept.has(path) ? ' (kept: at most one)' : ''}`);
  }
  return problems;
}

/** Ids of ours that the daemon no longer knows and need not know (World.mustKnow). */
function lostIds(w: World): Set<string> {
  const known = w.knownIds();
  return new Set([...w.idsUsed].filter((id) => !known.has(id) && !w.mustKnow.has(id)));
}

/**
 * A file set aside (unreadable, too large) keeps its document as it was (plan.ts setAsideOps),
 * under a former id of ours too (owner rule O4: re-marked once the file can be read): the
 * one document of such a path when none carries our id.
 */
function keptUnderFormerId(w: World): Set<string> {
  const { kept } = w.expected();
  const ours = oursByPath(w);
  const known = w.knownIds();
  const byPath = new Map<string, string[]>();
  for (const d of w.service.docs_()) {
    const id = d.metadata['dssync_installation'];
    const path = String(d.metadata['dssync_path']);
    if (id === undefined || id === w.installationId || !known.has(String(id)) || !kept.has(path) || ours.has(path)) continue;
    byPath.set(path, [...(byPath.get(path) ?? []), d.id]);
  }
  return new Set([...byPath.values()].filter((ids) => ids.length === 1).map((ids) => ids[0]!));
}

export async function checkInvariants(w: World): Promise<void> {
  w.service.faults = [];
  await w.restartIfCrashed();

  // 1. The live daemon on its own.
  const passesBefore = w.passes;
  await w.advance(QUIET_MS);
  const quietPasses = w.passes - passesBefore;
  // Another writer with our identity stops the mapping's writes until the operator settles
  // it (docs/reliability.md, "Identity"): convergence is not expected, the report is.
  const cloned = w.clones.size > 0;
  if (!w.remoteTampered && !w.blocked && !cloned) {
    expect(mirrorProblems(w, false), `the running daemon did not converge within ${QUIET_MS / 60_000} min of quiet`).toEqual([]);
  }
  expect(quietPasses, 'passes while quiet').toBeLessThanOrEqual(QUIET_PASSES);

  // 2. Never a partial file, in any pass (incremental, the start's, after a back-off, a
  // reload; issue 23 defect 6): `created` logs every upload of every pass as it happened,
  // so this end-of-history check covers each pass.
  const partial = w.service.created.filter((c) => c.during !== 'other' && w.partials.has(c.content));
  expect(partial.map((c) => `${c.name} uploaded half-written by a ${c.during === 'changes' ? 'n incremental' : ' full'} pass`)).toEqual([]);

  // 3. The delete window.
  expect(w.guardViolations).toEqual([]);

  // 5. The lease: every write of a mirror was sent by the process the marker names (so no
  // document of another live writer is deleted, and no two processes with one identity
  // both write: no duplicate survives the detection bound). Then the second process stops
  // gracefully, and the daemon must take the lease over and recover what it wrote (its
  // session is one this state never recorded) with no command.
  expect(w.leaseViolations, 'writes sent by a process that did not hold the lease').toEqual([]);
  expect(w.stateViolations, 'a damaged journal').toEqual([]);
  if (w.twinLive()) {
    await w.stopTwin();
    await w.advance(QUIET_MS);
    if (!w.remoteTampered && !w.blocked && !cloned) expect(mirrorProblems(w, false), 'after the second process stopped, the daemon did not take over').toEqual([]);
  }

  // 4. After a restart, everything.
  if (w.blocked) await w.operatorAllowsMassDelete();
  w.clock.t += INTENT_SETTLE_MS + 1;
  // SIM_WALL_BACK_REPAIR off: files' mtimes in the future after a backward step (or a
  // forward step undone) are set aside by every full pass until the wall clock passes them
  // (commands/index.ts FLAGS); the restart's pass comes once it has, and a window more.
  const ahead = w.mtimeAhead();
  if (!FLAGS.wallBackRepair && ahead > 0) w.clock.t += ahead + 60_000;
  await w.restart();
  await w.advance(QUIET_MS);
  if (w.blocked) {
    await w.operatorAllowsMassDelete();
    await w.advance(60_000);
  }
  // Another writer with our identity writes with the id the daemon writes with. A clone of
  // an id the daemon no longer knows is another installation (its state restored from before
  // that id); so is, while no lease vouches, a clone of a former id of ours (the state
  // restored from before the upgrade that drew the clone's id, whose re-marks a record still
  // names: owner rule O4): listed among a pass's conflicts and left untouched (O13, O21).
  const known = w.knownIds();
  if ([...w.clones.values()].includes(w.installationId)) expect(w.anotherWriterReported, 'another writer with our identity was not reported').toBe(true);
  const unlisted = [...w.clones].filter(([doc, id]) => id !== w.installationId && known.has(id) && !w.conflictsListed.has(doc));
  expect(unlisted.map(([doc, id]) => `${doc}: a document of ${id}, a former id of ours, was not listed among the conflicts`)).toEqual([]);
  if (!cloned) expect(mirrorProblems(w, true), 'after a restart').toEqual([]);
  // Former ids a listing taught are kept in the state: a restart still knows them (or the
  // second process's state does, when it was the one that learned them and re-marked their documents).
  const keptByTwin = w.twin === undefined ? new Set<string>() : w.knownIds(w.twin);
  expect([...w.mustKnow].filter((id) => !known.has(id) && !keptByTwin.has(id)), 'former ids of ours the restarted daemon no longer knows').toEqual([]);
  const all = new Map(w.service.docs_().map((d) => [d.id, d]));
  for (const p of w.people) {
    const d = all.get(p.id);
    if (!d) {
      expect(p.prunable, `${p.foreign ? "another installation's" : "a person's"} document ${p.name} (${p.id}) was deleted, and no prune "all" ran while it existed`).toBe(true);
      continue;
    }
    expect({ name: d.name, content: d.content }, `${p.foreign ? "another installation's" : "a person's"} document ${p.id} was changed`).toEqual({ name: p.name, content: p.content });
    if (!p.foreign) expect(d.metadata, `a person's document ${p.id} got metadata`).toEqual({});
  }
  const people = new Set(w.people.map((p) => p.id));
  // An unreadable file keeps what its path had, and the uploads of its open intents (lost or
  // late answers) stay until the file can be read again. A file too large is excluded: what
  // its intents uploaded is deleted like any document of an excluded file (seed 7).
  const { unreadable } = w.expected();
  // Uploads are sent under a marked name (engine/document-fields.ts markUploadName), so even
  // a lost answer of an incremental pass leaves no document dssync cannot tell for its own.
  // An unreadable file's upload is told by that name as the service stored it (lower-cased,
  // cut, its extension dropped, a suffix added: service-names.ts), its nonce whatever it was.
  const sentForUnreadable = (d: Doc): boolean => {
    const nonce = findUploadMark(d.name);
    return nonce !== undefined && [...unreadable].some((p) => storedName(markUploadName(documentName(p), nonce), w.service.variant.nameRule) === d.name);
  };
  // A service that ignores renames gets uploads under their real names: one whose answer
  // was lost and that landed after its intent closed is a person's document to any client
  // (docs/reliability.md, "Names the service rewrites"): left alone.
  const undecidable = (d: Doc): boolean => w.service.variant.renamesIgnored === true && d.byUs && findUploadMark(d.name) === undefined;
  // An id of ours that no identity knows any more (a state lost with its identity file, none
  // of its records left to tell): its documents are another installation's (docs/reliability.md, "Identity").
  const lost = lostIds(w);
  // So are the marked uploads whose nonce carries a lost id's tag (a lost answer whose intent
  // went with the journal): no tag of ours, so owner rule O21 leaves them (foreign-upload).
  const lostTags = [...lost].map((id) => uploadTag(MAPPING_ID, id));
  const lostIdsUpload = (d: Doc): boolean => {
    const nonce = findUploadMark(d.name);
    return nonce !== undefined && lostTags.some((tag) => nonceSession(nonce, tag) !== undefined);
  };
  const keptOld = keptUnderFormerId(w);
  const foreignLeft = [...all.values()].filter(
    (d) => !people.has(d.id) && !isLeaseDocument(d) && !undecidable(d) && d.metadata['dssync_installation'] !== w.installationId && !lost.has(String(d.metadata['dssync_installation'])) && !lostIdsUpload(d) && !sentForUnreadable(d) && !keptOld.has(d.id),
  );
  // ... and stay as they were: nothing of theirs deleted or changed by an installation that does not own them.
  const orphaned = w.orphaned;
  if (orphaned !== undefined && lost.has(orphaned.installationId) && !w.knownSinceOrphaned.has(orphaned.installationId)) {
    const touched = [...orphaned.docs].filter(([id, d]) => all.get(id)?.name !== d.name || all.get(id)?.content !== d.content);
    expect(touched.map(([id, d]) => `${id} ${d.name}: a document of the lost id ${orphaned.installationId} was ${all.has(id) ? 'changed' : 'deleted'}`)).toEqual([]);
  }
  // (While another writer has our identity nothing is written, cleaning up included.)
  if (!cloned) expect(foreignLeft.map((d) => `${d.id} ${d.name}: no metadata of ours and nobody's (a lost or late upload left behind)`)).toEqual([]);
  if (w.config.prune === 'all' && !cloned) {
    const left = w.people.filter((p) => !p.foreign && all.has(p.id));
    expect(left.map((p) => `${p.name} (${p.id}) not pruned with prune "all"`)).toEqual([]);
  }

  // 7. A data source created under its provisional name has its name by now (its holder named it).
  if (w.service.variant.born !== undefined) expect(w.service.dataSourceName, 'the data source created under its provisional name was never named').toBe(SHARE);

  // 6. Converged, the mirror writes nothing at its next start: what the service does to
  // names (a rewrite, a cut, renames ignored) is learned once, never fought every pass.
  if (!cloned) {
    const before = w.mirrorWrites;
    await w.restart();
    await w.advance(QUIET_MS);
    expect(w.mirrorWrites - before, 'writes by a converged mirror at its next start').toBe(0);
  }
  expect(w.leaseViolations, 'writes sent by a process that did not hold the lease').toEqual([]);
}
