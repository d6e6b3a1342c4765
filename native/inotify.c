/*
 * One inotify instance for the watcher's folders (src/local/watch/inotify.ts).
 *
 * Node's fs.watch costs ~1.35 KB of memory per watched folder (its FSWatcher, FSEvent and
 * libuv's handle and watcher list) and hides inotify's queue overflow. This module holds
 * nothing per folder: it opens one instance, adds and removes watches, and hands the raw
 * event records to JavaScript, which decodes them (inotify-events.ts) and keeps its own
 * map from watch descriptor to folder.
 *
 * open(onData) -> handle      onData(buffer) per read; onData(null, code) on a read error
 * add(handle, path, mask) -> wd       throws an Error with `code` ('ENOSPC', 'ENOENT', ...)
 * startAll(handle, paths, mask, done)  folders' starts on libuv's pool, then done(answers):
 *                             per path null (no folder), the watch's errno code, or
 *                             [wd, dev, ino, ...subfolder names] (lstat, watch, listing)
 * remove(handle, wd)          a descriptor the kernel dropped already (EINVAL) is no error
 * close(handle)               stops reading and closes the instance; idempotent
 *
 * Built by scripts/build-native.mjs; Node-API version 8, so one build serves every Node.js
 * line the package supports.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include <node_api.h>
#include <uv.h>
#include "module.h"

#define READ_BYTES 65536

typedef struct {
  uv_poll_t poll;
  int fd;
  int closed;
  int handle_done;
  int finalized;
  napi_env env;
  napi_ref on_data;
  napi_async_context context;
  /* Each instance reads into its own buffer: an instance of another thread's loop never shares it. */
  char buf[READ_BYTES] __attribute__((aligned(8)));
} instance_t;

static const char *errno_code(int e) {
  switch (e) {
    case ENOSPC: return "ENOSPC";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case EBADF: return "EBADF";
    case ELOOP: return "ELOOP";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EIO: return "EIO";
    default: return "EUNKNOWN";
  }
}

static napi_value throw_errno(napi_env env, const char *call, int e) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", call, strerror(e));
  napi_throw_error(env, errno_code(e), msg);
  return NULL;
}

static void call_js(instance_t *in, napi_value *argv, size_t argc) {
  napi_env env = in->env;
  napi_value cb, recv, result;
  if (napi_get_reference_value(env, in->on_data, &cb) != napi_ok || cb == NULL) return;
  napi_get_global(env, &recv);
  if (napi_make_callback(env, in->context, recv, cb, argc, argv, &result) == napi_pending_exception) {
    napi_value err;
    napi_get_and_clear_last_exception(env, &err);
    napi_fatal_exception(env, err);
  }
}

/*
 * The instance's memory is freed once both its poll handle is closed and its JavaScript
 * handle is collected, whichever comes last.
 */
static void on_close(uv_handle_t *h) {
  instance_t *in = h->data;
  in->handle_done = 1;
  if (in->finalized) free(in);
}

static void stop(instance_t *in) {
  if (in->closed) return;
  in->closed = 1;
  uv_poll_stop(&in->poll);
  close(in->fd);
  in->fd = -1;
  uv_close((uv_handle_t *)&in->poll, on_close);
}

static void on_readable(uv_poll_t *poll, int status, int events) {
  instance_t *in = poll->data;
  (void)events;
  if (in->closed) return;
  napi_handle_scope scope;
  napi_open_handle_scope(in->env, &scope);
  if (status < 0) {
    napi_value argv[2];
    napi_get_null(in->env, &argv[0]);
    napi_create_string_utf8(in->env, uv_err_name(status), NAPI_AUTO_LENGTH, &argv[1]);
    call_js(in, argv, 2);
  } else {
    for (;;) {
      ssize_t n = read(in->fd, in->buf, sizeof in->buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      napi_value argv[2];
      if (n <= 0) {
        napi_get_null(in->env, &argv[0]);
        napi_create_string_utf8(in->env, n == 0 ? "EOF" : errno_code(errno), NAPI_AUTO_LENGTH, &argv[1]);
        call_js(in, argv, 2);
        break;
      }
      void *data;
      if (napi_create_buffer_copy(in->env, (size_t)n, in->buf, &data, &argv[0]) != napi_ok) break;
      call_js(in, argv, 1);
      if (in->closed) break;
    }
  }
  napi_close_handle_scope(in->env, scope);
}

/* The environment ends (the process exits): stop reading; the loop closes no more handles. */
static void cleanup(void *arg) {
  instance_t *in = arg;
  if (!in->closed) {
    in->closed = 1;
    uv_poll_stop(&in->poll);
    close(in->fd);
  }
}

static void finalize(napi_env env, void *data, void *hint) {
  instance_t *in = data;
  (void)hint;
  napi_delete_reference(env, in->on_data);
  napi_async_destroy(env, in->context);
  if (!in->closed) {
    napi_remove_env_cleanup_hook(env, cleanup, in);
    stop(in);
  }
  in->finalized = 1;
  if (in->handle_done) free(in);
}

static napi_value js_open(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], name, handle;
  napi_valuetype t;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function) {
    napi_throw_type_error(env, NULL, "open(onData): a function is required");
    return NULL;
  }
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return throw_errno(env, "inotify_init1", errno);
  instance_t *in = calloc(1, sizeof *in);
  if (in == NULL) {
    close(fd);
    return throw_errno(env, "open", ENOMEM);
  }
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  in->fd = fd;
  in->env = env;
  in->poll.data = in;
  if (uv_poll_init(loop, &in->poll, fd) != 0) {
    close(fd);
    free(in);
    return throw_errno(env, "uv_poll_init", EINVAL);
  }
  napi_create_reference(env, argv[0], 1, &in->on_data);
  napi_create_string_utf8(env, "dssync:inotify", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, NULL, name, &in->context);
  uv_poll_start(&in->poll, UV_READABLE, on_readable);
  napi_add_env_cleanup_hook(env, cleanup, in);
  napi_create_external(env, in, finalize, NULL, &handle);
  return handle;
}

/* The instance, path and mask of add(handle, path, mask); NULL with an error thrown. */
static instance_t *path_and_mask(napi_env env, napi_callback_info info, const char *fn, char *path, size_t size, uint32_t *mask) {
  napi_value argv[3];
  size_t len;
  if (!call_args(env, info, 3, argv, "(handle, path, mask) are required")) return NULL;
  instance_t *in = unwrap_handle(env, argv[0], "inotify");
  if (in == NULL) return NULL;
  if (in->closed) {
    throw_errno(env, "inotify_add_watch", EBADF);
    return NULL;
  }
  if (napi_get_value_string_utf8(env, argv[1], path, size, &len) != napi_ok) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s: the path must be a string", fn);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  if (len >= size - 1) {
    throw_errno(env, "inotify_add_watch", ENAMETOOLONG);
    return NULL;
  }
  if (napi_get_value_uint32(env, argv[2], mask) != napi_ok) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s: the mask must be a number", fn);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  return in;
}

/*
 * Folders' starts for the watcher's set-up (src/local/watch/folder-watch.ts), a batch at a
 * time on libuv's pool: for each folder, its identity (lstat), then its watch, then the names
 * of its subfolders, in that order (the identity read before the watch; a subfolder made after
 * the listing is heard by the watch). Instead of an lstat and a readdir through the pool each,
 * which make a Dirent of every file on the main thread: at a million files in 50,000 folders
 * the set-up's CPU falls from ~6.4 s to ~3 s, and its main thread's from ~3.2 s to ~0.9 s.
 *
 * The batch adds its watches through a duplicate of the instance's descriptor: the instance
 * lives until the batch ends even if it is closed meanwhile (its watches end with it then).
 */
typedef struct {
  char *path;
  /* Not a folder: the lstat failed, or found another kind of file. */
  int gone;
  /* The watch's errno, or 0. */
  int err;
  int wd;
  double dev, ino;
  /* The subfolders' names, each ended by a NUL. */
  char *names;
  size_t names_len, names_cap;
} start_t;

typedef struct {
  napi_async_work work;
  napi_ref done;
  int fd;
  uint32_t mask;
  uint32_t n;
  start_t *items;
} batch_t;

/* getdents64's record (the system call itself: its glibc wrapper is 2.30's, newer than some hosts'). */
struct dirent64_rec {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

#define DENTS_BYTES 32768

static void add_name(start_t *s, const char *name) {
  size_t len = strlen(name) + 1;
  if (s->names_len + len > s->names_cap) {
    size_t cap = s->names_cap ? s->names_cap * 2 : 256;
    while (cap < s->names_len + len) cap *= 2;
    char *grown = realloc(s->names, cap);
    if (grown == NULL) return; /* out of memory: a subfolder not named goes unwatched until an event of this folder names it */
    s->names = grown;
    s->names_cap = cap;
  }
  memcpy(s->names + s->names_len, name, len);
  s->names_len += len;
}

static void start_one(int fd, uint32_t mask, start_t *s, char *dents) {
  struct stat st;
  if (lstat(s->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    s->gone = 1;
    return;
  }
  s->wd = inotify_add_watch(fd, s->path, mask);
  if (s->wd < 0) {
    s->err = errno;
    return;
  }
  s->dev = (double)st.st_dev;
  s->ino = (double)st.st_ino;
  /* A folder that cannot be listed names no subfolder: the walk says what it cannot read. */
  int dfd = open(s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return;
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, dents, DENTS_BYTES);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct dirent64_rec *e = (struct dirent64_rec *)(dents + off);
      off += e->d_reclen;
      const char *name = e->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      int folder = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat es;
        folder = fstatat(dfd, name, &es, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(es.st_mode);
      }
      if (folder) add_name(s, name);
    }
  }
  close(dfd);
}

static void batch_execute(napi_env env, void *data) {
  batch_t *b = data;
  (void)env;
  char *dents = malloc(DENTS_BYTES);
  for (uint32_t i = 0; i < b->n; i++) {
    start_t *s = &b->items[i];
    if (dents == NULL) {
      s->err = ENOMEM;
      continue;
    }
    start_one(b->fd, b->mask, s, dents);
  }
  free(dents);
  close(b->fd);
}

static void batch_free(napi_env env, batch_t *b) {
  for (uint32_t i = 0; i < b->n; i++) {
    free(b->items[i].path);
    free(b->items[i].names);
  }
  free(b->items);
  if (b->done != NULL) napi_delete_reference(env, b->done);
  if (b->work != NULL) napi_delete_async_work(env, b->work);
  free(b);
}

/* One folder's answer: null (gone), its errno's code (the watch failed), or [wd, dev, ino, ...names]. */
static napi_value start_answer(napi_env env, const start_t *s) {
  napi_value out, v;
  if (s->gone) {
    napi_get_null(env, &out);
    return out;
  }
  if (s->err != 0) {
    napi_create_string_utf8(env, errno_code(s->err), NAPI_AUTO_LENGTH, &out);
    return out;
  }
  napi_create_array(env, &out);
  napi_create_int32(env, s->wd, &v);
  napi_set_element(env, out, 0, v);
  napi_create_double(env, s->dev, &v);
  napi_set_element(env, out, 1, v);
  napi_create_double(env, s->ino, &v);
  napi_set_element(env, out, 2, v);
  uint32_t i = 3;
  for (size_t off = 0; off < s->names_len; off += strlen(s->names + off) + 1) {
    /* A name that is not UTF-8 is decoded with U+FFFD, as readdir's strings are: its path
       then names nothing, and the walk says the entry cannot be mirrored. */
    napi_create_string_utf8(env, s->names + off, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, out, i++, v);
  }
  return out;
}

static void batch_complete(napi_env env, napi_status status, void *data) {
  batch_t *b = data;
  napi_value answers, cb, recv, result;
  (void)status;
  napi_create_array_with_length(env, b->n, &answers);
  for (uint32_t i = 0; i < b->n; i++) napi_set_element(env, answers, i, start_answer(env, &b->items[i]));
  if (napi_get_reference_value(env, b->done, &cb) == napi_ok && cb != NULL) {
    napi_get_global(env, &recv);
    if (napi_call_function(env, recv, cb, 1, &answers, &result) == napi_pending_exception) {
      napi_value err;
      napi_get_and_clear_last_exception(env, &err);
      napi_fatal_exception(env, err);
    }
  }
  batch_free(env, b);
}

static napi_value js_start_all(napi_env env, napi_callback_info info) {
  napi_value argv[4], name;
  uint32_t n, mask;
  bool is_array;
  napi_valuetype t;
  if (!call_args(env, info, 4, argv, "startAll(handle, paths, mask, done) is required")) return NULL;
  instance_t *in = unwrap_handle(env, argv[0], "inotify");
  if (in == NULL) return NULL;
  if (in->closed) return throw_errno(env, "inotify_add_watch", EBADF);
  if (napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[1], &n) != napi_ok) {
    napi_throw_type_error(env, NULL, "startAll: the paths must be an array");
    return NULL;
  }
  if (napi_get_value_uint32(env, argv[2], &mask) != napi_ok || napi_typeof(env, argv[3], &t) != napi_ok || t != napi_function) {
    napi_throw_type_error(env, NULL, "startAll: a mask and a function are required");
    return NULL;
  }
  batch_t *b = calloc(1, sizeof *b);
  if (b == NULL) return throw_errno(env, "startAll", ENOMEM);
  b->items = calloc(n ? n : 1, sizeof *b->items);
  b->fd = -1;
  if (b->items == NULL) {
    free(b);
    return throw_errno(env, "startAll", ENOMEM);
  }
  b->n = n;
  b->mask = mask;
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    size_t len;
    start_t *s = &b->items[i];
    if (napi_get_element(env, argv[1], i, &v) != napi_ok || napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
      batch_free(env, b);
      napi_throw_type_error(env, NULL, "startAll: each path must be a string");
      return NULL;
    }
    s->path = malloc(len + 1);
    if (s->path == NULL) {
      batch_free(env, b);
      return throw_errno(env, "startAll", ENOMEM);
    }
    napi_get_value_string_utf8(env, v, s->path, len + 1, &len);
    /* A path longer than the kernel takes fails as its lstat would. */
    if (len >= 4096) s->gone = 1;
  }
  b->fd = fcntl(in->fd, F_DUPFD_CLOEXEC, 0);
  if (b->fd < 0) {
    int e = errno;
    batch_free(env, b);
    return throw_errno(env, "startAll", e);
  }
  napi_create_reference(env, argv[3], 1, &b->done);
  napi_create_string_utf8(env, "dssync:inotify-start", NAPI_AUTO_LENGTH, &name);
  if (napi_create_async_work(env, NULL, name, batch_execute, batch_complete, b, &b->work) != napi_ok || napi_queue_async_work(env, b->work) != napi_ok) {
    close(b->fd);
    batch_free(env, b);
    return throw_errno(env, "startAll", ENOMEM);
  }
  return NULL;
}

static napi_value js_add(napi_env env, napi_callback_info info) {
  char path[4097];
  uint32_t mask;
  napi_value out;
  instance_t *in = path_and_mask(env, info, "add", path, sizeof path, &mask);
  if (in == NULL) return NULL;
  int wd = inotify_add_watch(in->fd, path, mask);
  if (wd < 0) return throw_errno(env, "inotify_add_watch", errno);
  napi_create_int32(env, wd, &out);
  return out;
}

static napi_value js_remove(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t wd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  instance_t *in = argc >= 2 ? unwrap_handle(env, argv[0], "inotify") : NULL;
  if (in == NULL) return NULL;
  if (napi_get_value_int32(env, argv[1], &wd) != napi_ok) {
    napi_throw_type_error(env, NULL, "remove: the descriptor must be a number");
    return NULL;
  }
  if (!in->closed && inotify_rm_watch(in->fd, wd) < 0 && errno != EINVAL) return throw_errno(env, "inotify_rm_watch", errno);
  return NULL;
}

static napi_value js_close(napi_env env, napi_callback_info info) {
  instance_t *in = only_handle(env, info, "inotify");
  if (in == NULL) return NULL;
  if (!in->closed) {
    napi_remove_env_cleanup_hook(env, cleanup, in);
    stop(in);
  }
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    NATIVE_FUNCTION("open", js_open),
    NATIVE_FUNCTION("add", js_add),
    NATIVE_FUNCTION("startAll", js_start_all),
    NATIVE_FUNCTION("remove", js_remove),
    NATIVE_FUNCTION("close", js_close),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
