/**
 * `dssync chunks list | get` (DESIGN §6). Note that reading one chunk names no data
 * source: the service's path for it has none.
 */
import type { CommandModule } from 'yargs';
import { explainNotFound, missingDocumentMessage, requireValue, withContext, type CliContext } from '../context.js';
import { commandGroup, DOC, DS, wideOption, withDoc, withDs, type DocArgs, type GlobalArgs } from '../options.js';
import { formatChunk, formatChunks, formatJsonRecord, formatJsonRecords } from '../output.js';

// ---- operations --------------------------------------------------------------------

export async function listChunks(ctx: CliContext, ds: string, doc: string): Promise<void> {
  const records = await explainNotFound(
    () => ctx.api.listChunks(ds, doc),
    () => missingDocumentMessage(ctx.api, ds, doc),
  );
  ctx.out(ctx.json ? formatJsonRecords(records) : formatChunks(records, { wide: ctx.wide }));
}

export async function getChunk(ctx: CliContext, doc: string, chunk: string): Promise<void> {
  const record = await explainNotFound(
    () => ctx.api.getChunk(doc, chunk),
    () => `chunk ${chunk} of document ${doc} not found`,
  );
  ctx.out(ctx.json ? formatJsonRecord(record) : formatChunk(record));
}

// ---- yargs -------------------------------------------------------------------------

interface GetArgs extends GlobalArgs {
  doc: string;
  chunk: string;
}

const listCommand: CommandModule<GlobalArgs, DocArgs> = {
  command: 'list <ds> <doc>',
  describe: 'List the chunks the service cut a document into',
  builder: (y) =>
    withDoc(withDs(y))
      .option('wide', wideOption)
      .example('$0 chunks list ds_123 doc_456', 'Table of id, index and the start of each text')
      .example('$0 chunks list ds_123 doc_456 --json', 'Normalised records with the whole text'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    const doc = requireValue(args.doc, DOC);
    await withContext(args, (ctx) => listChunks(ctx, ds, doc));
  },
};

const getCommand: CommandModule<GlobalArgs, GetArgs> = {
  command: 'get <doc> <chunk>',
  describe: 'Show one chunk with its whole text',
  builder: (y) =>
    withDoc(y)
      .positional('chunk', { type: 'string', describe: 'Chunk id', demandOption: true })
      .example('$0 chunks get doc_456 chunk_789', 'Show the chunk and its text'),
  handler: async (args) => {
    const doc = requireValue(args.doc, DOC);
    const chunk = requireValue(args.chunk, 'the chunk id <chunk>');
    await withContext(args, (ctx) => getChunk(ctx, doc, chunk));
  },
};

export const chunksCommand = commandGroup('chunks', 'Read the chunks of a document: list, get', (y) =>
  y
    .command(listCommand)
    .command(getCommand)
    .demandCommand(1, 'Name a chunks subcommand: list or get.')
    .example('$0 chunks list ds_123 doc_456', 'List the chunks of doc_456'),
);
