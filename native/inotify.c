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
 * remove(handle, wd)          a descriptor the kernel dropped already (EINVAL) is no error
 * close(handle)               stops reading and closes the instance; idempotent
 *
 * Built by scripts/build-native.mjs; Node-API version 8, so one build serves every Node.js
 * line the package supports.
 */
#define NAPI_VERSION 8
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
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

static napi_value js_add(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  char path[4097];
  size_t len;
  uint32_t mask;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  instance_t *in = argc >= 3 ? unwrap_handle(env, argv[0], "inotify") : NULL;
  if (in == NULL) return NULL;
  if (in->closed) return throw_errno(env, "inotify_add_watch", EBADF);
  if (napi_get_value_string_utf8(env, argv[1], path, sizeof path, &len) != napi_ok) {
    napi_throw_type_error(env, NULL, "add: the path must be a string");
    return NULL;
  }
  if (len >= sizeof path - 1) return throw_errno(env, "inotify_add_watch", ENAMETOOLONG);
  if (napi_get_value_uint32(env, argv[2], &mask) != napi_ok) {
    napi_throw_type_error(env, NULL, "add: the mask must be a number");
    return NULL;
  }
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
    NATIVE_FUNCTION("remove", js_remove),
    NATIVE_FUNCTION("close", js_close),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
