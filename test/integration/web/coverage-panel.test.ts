/// <reference lib="dom" />
/**
 * The coverage panel (issue 35.6) and scanned PDFs named (35.4), by a real `dssync run` (the
 * built binary) against the emulator on a mixed folder, seen in a real browser (Debian's
 * chromium through playwright-core, as status-page.test.ts; where /usr/bin/chromium is
 * missing this test FAILS). The daemon's problem list names the scan `no-text` once it was
 * sent, and the damaged PDF `unchecked`; the page's panel counts per extension.
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { runCli } from '../cli/run-cli.js';
import { daemonWorkspace, freePort, startDaemon, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';

const CHROMIUM = process.env.DSSYNC_CHROMIUM ?? '/usr/bin/chromium';
/** A temp file unless DSSYNC_SCREENSHOT names one (kept then, to look at). */
const SCREENSHOT = process.env.DSSYNC_SCREENSHOT ? resolve(process.env.DSSYNC_SCREENSHOT) : join(tmpdir(), `dssync-coverage-${process.pid}.png`);
const FIXTURES = new URL('../../fixtures/office/', import.meta.url);

let ws: Workspace;
let daemon: DaemonProcess;
let context: BrowserContext;
let page: Page;
let profile: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM}: install it or set DSSYNC_CHROMIUM. This test does not skip.`);
  // No ingestion check: its verdict on the damaged PDF (not ingested) would take the entry's place.
  ws = await daemonWorkspace({ mapping: { id: 'share' }, config: { ingestionCheck: { enabled: false }, status: { listen: `127.0.0.1:${await freePort()}` } } });
  await cp(FIXTURES, ws.share, { recursive: true });
  const deck = await readFile(new URL('sales/deck.pptx', FIXTURES));
  await ws.write('sales/broken.pptx', deck.subarray(0, deck.length >> 1));
  await ws.write('policies/truncated.pdf', await readFile(new URL('../truncated.pdf', FIXTURES)));
  daemon = await startDaemon(ws);
  await waitFor(async () => (await daemon.status()).mappings.every((m) => m.lastPass !== undefined), { timeout: 60_000, what: 'the first pass' });
  profile = await mkdtemp(join(tmpdir(), 'dssync-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'], viewport: { width: 1360, height: 1000 } });
  page = context.pages()[0] ?? (await context.newPage());
}, 120_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await daemon?.kill().catch(() => undefined);
  await ws?.close().catch(() => undefined);
  if (!process.env.DSSYNC_SCREENSHOT) await rm(SCREENSHOT, { force: true });
  if (profile) await rm(profile, { recursive: true, force: true });
});

it('the daemon names the scanned PDF (no text) and the damaged one (unchecked); both are sent', async () => {
  const kinds = async (): Promise<string[]> => ((await daemon.status()).mappings[0]?.problems ?? []).map((p) => p.kind);
  await waitFor(async () => (await kinds()).includes('no-text') && (await kinds()).includes('unchecked'), { timeout: 30_000, what: 'the text checks' });
  const problems = Object.fromEntries(((await daemon.status()).mappings[0]?.problems ?? []).map((p) => [p.path, `${p.kind}: ${p.reason}`]));
  expect(problems['policies/scanned-contract.pdf']).toBe('no-text: no text: the App cannot read it (scanned?)');
  expect(problems['policies/truncated.pdf']).toMatch(/^unchecked: the PDF could not be checked: /);
  expect(problems['policies/memo.pdf']).toBeUndefined();
  const names = ws.emu.store.listDocuments(ws.dataSourceId()).map((d) => d.name);
  expect(names).toEqual(expect.arrayContaining(['policies/scanned-contract.pdf', 'policies/truncated.pdf']));
}, 60_000);

it('the page shows the coverage panel, per extension', async () => {
  const link = await runCli(['status', '--config', ws.configPath, '--url'], ws.env);
  const url = /http:\/\/\S+\/login\?code=\S+/.exec(link.stdout)?.[0];
  if (!url) throw new Error(`dssync status --url printed no link: ${link.stdout}${link.stderr}`);
  await page.goto(url);
  const table = page.locator('table.coverage[data-mapping="share"]');
  await table.waitFor({ timeout: 30_000 });
  const cells = async (ext: string): Promise<string[]> => (await table.locator('tr', { has: page.locator(`td.path:text-is("${ext}")`) }).locator('td').allInnerTexts()).map((t) => t.trim());
  // extension, as is, converted, no text, unchecked, skipped: policy, too big, unsupported, failed: conversion, refused, pending
  expect(await cells('.pdf')).toEqual(['.pdf', '3', '0', '1', '1', '0', '0', '0', '0', '0', '0']);
  expect(await cells('.pptx')).toEqual(['.pptx', '0', '1', '0', '0', '0', '0', '0', '1', '0', '0']);
  expect(await cells('.xls')).toEqual(['.xls', '0', '0', '0', '0', '0', '0', '1', '0', '0', '0']);
  expect(await cells('total')).toEqual(['total', '6', '11', '1', '1', '0', '0', '2', '1', '0', '0']);
  await page.locator('.s-coverage').screenshot({ path: SCREENSHOT });
}, 60_000);
