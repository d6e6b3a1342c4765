/**
 * The resolved, typed configuration: what the file said, with the environment and flags
 * applied, relative paths resolved and every default filled in. Objects of these types
 * returned by load.ts are deeply frozen.
 */
import type { AuthFileSettings } from '../auth/settings.js';
import type { Connection } from './connection.js';
import type { ListenAddress } from './listen.js';
import type { LOG_LEVELS } from './schema.js';

export type LogLevel = (typeof LOG_LEVELS)[number];

export interface QueueConfig {
  /** Remote operations running at once. */
  readonly concurrency: number;
  /** Global cap on requests started per second. */
  readonly requestsPerSecond: number;
  /** Attempts per operation before it is reported as failed (1 = no retry). */
  readonly maxAttempts: number;
  /** Most files in one upload request. */
  readonly uploadBatchFiles: number;
  /** Most bytes (sum of file sizes) in one upload request; a larger single file goes alone. */
  readonly uploadBatchBytes: number;
  readonly timeouts: {
    readonly connectMs: number;
    readonly headersMs: number;
    readonly bodyMs: number;
  };
}

export interface DataSourceSpec {
  readonly name: string;
  /** Non-empty. Used only when the data source must be created. */
  readonly llmConnectorIds: readonly string[];
}

/** How a mapping learns of changes (docs/watch.md). */
export interface WatchConfig {
  /** auto: events on local filesystems, polling on network and FUSE mounts. */
  readonly mode: 'auto' | 'events' | 'poll';
  /** Target time between two polls of a file (s). */
  readonly pollIntervalSeconds: number;
  /** CPU the poller may use, in percent of one core. */
  readonly pollBudgetPercent: number;
}

interface MappingCommon {
  /** Stable id: the key of this mapping in the state file and in documents' metadata. */
  readonly id: string;
  /** Absolute, normalised path of the mapped folder (no trailing slash). */
  readonly path: string;
  /** Globs of files to mirror (relative POSIX paths, case-insensitive). */
  readonly include: readonly string[];
  /** Globs excluded on top of the built-in excludes (hidden, lock, temp and swap files). */
  readonly exclude: readonly string[];
  /** Gitignore-syntax file, relative to the mapped folder. */
  readonly ignoreFile: string;
  /** Larger files are skipped and reported. */
  readonly maxFileBytes: number;
  /** What happens to each extension, where the mapping overrides the default (docs/formats.md). */
  readonly formats: Readonly<Record<string, 'as-is' | 'convert' | 'skip'>>;
  /** See url-template.ts. */
  readonly urlTemplate: string;
  /** Static metadata added to every document (dssync's own keys win). */
  readonly metadata: Readonly<Record<string, string | number | boolean>>;
  /** 'ours': only documents carrying dssync metadata are ever deleted. */
  readonly prune: 'ours' | 'all';
  /** A pass that would delete more than this share (0-100) of the data source stops. */
  readonly maxDeletePercent: number;
  /** Follow symbolic links whose target lies inside the mapped folder. */
  readonly followSymlinks: boolean;
  /** The top-level `watch`, overridden key by key by the mapping's. */
  readonly watch: WatchConfig;
}

/** Exactly one of dataSourceId / dataSource is set. */
export type MappingConfig = MappingCommon &
  (
    | { readonly dataSourceId: string; readonly dataSource?: undefined }
    | { readonly dataSourceId?: undefined; readonly dataSource: DataSourceSpec }
  );

/** Connection keys as the config file gave them (tokenFile resolved against the file's folder). */
export interface FileConnectionSettings {
  readonly baseUrl?: string | undefined;
  readonly allowInsecureHttp?: boolean | undefined;
  readonly organizationId?: string | undefined;
  readonly organizationHeader?: string | undefined;
  readonly tokenFile?: string | undefined;
  readonly auth?: AuthFileSettings | undefined;
}

/** Everything but the resolved connection: enough for commands that need no token. */
export interface Settings {
  /** Absolute path of the config file read, if any. */
  readonly file?: string | undefined;
  /** The file's connection keys, to hand to resolveConnection. */
  readonly fileConnection: FileConnectionSettings;
  /** Effective service address and organization (flag > env > file), when known. */
  readonly baseUrl?: string | undefined;
  readonly organizationId?: string | undefined;
  /** The header that carries the organization id (env DSSYNC_ORG_HEADER > file > default). */
  readonly organizationHeader: string;
  readonly statePath: string;
  /** The pinned installation id (env DSSYNC_INSTALLATION_ID > file), when pinned. */
  readonly installationId?: string | undefined;
  readonly appId?: string | undefined;
  readonly logLevel: LogLevel;
  readonly queue: QueueConfig;
  readonly status: StatusSettings;
  readonly tls: { readonly caFile?: string | undefined };
  readonly rescanIntervalSeconds: number;
  readonly debounceMs: number;
  readonly ingestionCheck: { readonly enabled: boolean; readonly delaySeconds: number };
  /** Possibly empty: admin commands need none; see requireMappings. */
  readonly mappings: readonly MappingConfig[];
}

/** The status endpoint and page (docs/status.md). */
export interface StatusSettings {
  readonly listen: ListenAddress | false;
  /** Rescan / retry buttons on the page. Default: on for a loopback address, off otherwise. */
  readonly actions: boolean;
  /** The bearer token's file, needed to read the page off loopback (the token is read by the daemon). */
  readonly tokenFile?: string | undefined;
  /** Host names the page may be reached by, besides the listen address and localhost. */
  readonly allowedHosts: readonly string[];
}

export interface Config extends Settings {
  /** The token is a non-enumerable property: it does not show in JSON or util.inspect. */
  readonly connection: Readonly<Connection>;
}
