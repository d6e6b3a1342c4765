/**
 * Every top-level command, one module per command group (DESIGN §2). Add a group here.
 */
import type { CommandModule } from 'yargs';
import { appsCommand } from './apps.js';
import { authCommand } from './auth.js';
import { chunksCommand } from './chunks.js';
import { configCommand } from './config-check.js';
import { datasourcesCommand } from './datasources.js';
import { documentsCommand } from './documents.js';
import { emulatorCommand } from './emulator.js';
import { probeCommand } from './probe.js';
import { demoCommand } from './demo.js';
import { runCommand } from './run.js';
import { statusCommand } from './status.js';
import { syncCommand } from './sync.js';
import { adoptCommand, identityCommand } from './identity.js';
import { confirmDeleteCommand, pauseCommand, resumeCommand } from './daemon-actions.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const commandModules: CommandModule<any, any>[] = [
  datasourcesCommand,
  documentsCommand,
  chunksCommand,
  appsCommand,
  emulatorCommand,
  syncCommand,
  adoptCommand,
  identityCommand,
  runCommand,
  statusCommand,
  pauseCommand,
  resumeCommand,
  confirmDeleteCommand,
  configCommand,
  authCommand,
  probeCommand,
  demoCommand,
];
