/**
 * Node's `http` module, taken without an ES module facade. Building the facade of
 * `import … from 'node:http'` reads every export, and three of them (`WebSocket`,
 * `MessageEvent`, `CloseEvent`) are getters that load Node's bundled undici with its fetch,
 * HTTP/2 and zlib: ~80 ms of CPU at every start, for modules dssync never uses. So `node:http`
 * is taken here, and lint forbids importing its values anywhere else in src/ (types are erased).
 */
export const http = process.getBuiltinModule('node:http');
