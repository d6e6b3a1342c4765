/** The coverage table (docs/status.md, "Coverage") as `status --coverage` and a dry run print it. */
import type { CoverageCounts } from '../engine/coverage.js';
import type { MappingCoverage } from '../daemon/status/coverage.js';

export type { MappingCoverage };

const HEAD = ['extension', 'as is', 'converted', 'no text', 'unchecked', 'skipped: policy', 'too big', 'unsupported', 'failed: conversion', 'refused', 'pending'];

function cells(c: CoverageCounts): number[] {
  return [c.asIs, c.converted, c.noText, c.unchecked, c.skipped.policy, c.skipped.tooBig, c.skipped.unsupported, c.failed.conversion, c.failed.refused, c.pending];
}

/** One mapping's table, for a terminal. */
export function formatCoverage(c: MappingCoverage, planned: boolean): string {
  const title = `Coverage of ${c.mappingId} (${c.path})${planned ? ', once this sync has run' : ''}:`;
  if (c.error !== undefined) return `${title}\n  not counted: ${c.error}\n`;
  if (c.rows.length === 0) return `${title}\n  no files\n`;
  const table = [HEAD, ...c.rows.map((r) => [r.extension || '(none)', ...cells(r).map(String)]), ['total', ...cells(c.total).map(String)]];
  const widths = HEAD.map((_, i) => Math.max(...table.map((row) => (row[i] as string).length)));
  const lines = table.map((row) => `  ${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ')}`.trimEnd());
  return `${title}\n${lines.join('\n')}\n`;
}
