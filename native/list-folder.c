/*
 * One folder listed and its files lstat-ed in one call, for the folder lister's worker
 * (src/local/lister-worker.ts; the steps are src/local/list-steps.ts, whose answer this is):
 * the folder opened O_DIRECTORY (O_NOFOLLOW when asked), its kernel path read from
 * /proc/self/fd, its entries read through that descriptor and sorted by their bytes (as
 * libuv's scandir sorts them), each file stat-ed relative to it (fstatat, no link followed).
 * Nothing but the folder is opened. In node:fs's synchronous calls the same work cost ~10 µs
 * of the worker's CPU a file, half of it outside the system calls (a Stats object, a Dirent,
 * a joined path each); here it is the calls (docs/performance.md, "Session 30").
 *
 * listFolder(path, noFollow, flags, stopIndex, progressIndex) ->
 *   { realPath, names, types: Uint8Array, stats: Float64Array, statErrors }
 * with the numbers of src/local/folder-listing.ts: types ENTRY_*, stats STAT_FIELDS a file
 * (size, mtimeMs, ctimeMs, dev, ino; in place of the size -1 no longer a file, -2 gone, -3
 * failed: the error in statErrors), NaN for what is not a file. mtimeMs and ctimeMs are
 * computed as node:fs computes them (sec * 1e3 + nsec / 1e6), so that the numbers equal
 * an lstat's. `flags` is the worker's shared Int32Array: the listing stops (an error of code
 * ESTOPPED) when flags[stopIndex] is set, and bumps flags[progressIndex] after the folder's
 * read and each file's stat (a hung call leaves it still: folder-lister.ts).
 * A failure of the folder itself throws an Error with the errno's name as its `code`.
 * Node-API version 8, as native/inotify.c.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <node_api.h>
#include "module.h"

enum { ENTRY_OTHER = 0, ENTRY_FILE = 1, ENTRY_DIR = 2, ENTRY_LINK = 3 };
enum { STAT_FIELDS = 5, STAT_SIZE = 0, STAT_MTIME = 1, STAT_CTIME = 2, STAT_DEV = 3, STAT_INO = 4 };
#define STAT_OTHER_TYPE (-1.0)
#define STAT_GONE (-2.0)
#define STAT_FAILED (-3.0)

static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ELOOP: return "ELOOP";
    case EIO: return "EIO";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ESTALE: return "ESTALE";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINTR: return "EINTR";
    case ENOMEM: return "ENOMEM";
    case EOVERFLOW: return "EOVERFLOW";
    case ENXIO: return "ENXIO";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ENODEV: return "ENODEV";
    case EAGAIN: return "EAGAIN";
    case EBUSY: return "EBUSY";
    case ENOTCONN: return "ENOTCONN";
    case EHOSTDOWN: return "EHOSTDOWN";
    case ECONNABORTED: return "ECONNABORTED";
    case ECONNRESET: return "ECONNRESET";
    default: return "EUNKNOWN";
  }
}

/* "ENOENT: no such file or directory, open '/srv/x'", as node:fs words an error. */
static void describe(char *out, size_t size, int e, const char *syscall, const char *path) {
  char what[128];
  snprintf(what, sizeof what, "%s", strerror(e));
  if (what[0] >= 'A' && what[0] <= 'Z' && !(what[1] >= 'A' && what[1] <= 'Z')) what[0] = (char)(what[0] - 'A' + 'a');
  snprintf(out, size, "%s: %s, %s '%s'", errno_name(e), what, syscall, path);
}

static napi_value throw_errno(napi_env env, int e, const char *syscall, const char *path) {
  char msg[4300];
  describe(msg, sizeof msg, e, syscall, path);
  napi_throw_error(env, errno_name(e), msg);
  return NULL;
}

typedef struct {
  char *name;
  unsigned char type;
} entry;

static int by_bytes(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static unsigned char type_of_mode(mode_t m) {
  return S_ISREG(m) ? ENTRY_FILE : S_ISDIR(m) ? ENTRY_DIR : S_ISLNK(m) ? ENTRY_LINK : ENTRY_OTHER;
}

static unsigned char type_of_dirent(unsigned char d) {
  return d == DT_REG ? ENTRY_FILE : d == DT_DIR ? ENTRY_DIR : d == DT_LNK ? ENTRY_LINK : ENTRY_OTHER;
}

/* node:fs's milliseconds of a timespec. */
static double ms_of(struct timespec t) {
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/*
 * The name is valid UTF-8 (no overlong form, surrogate or code point past U+10FFFF). One
 * that is not reaches JavaScript with U+FFFD in it, and the path built from that does not
 * exist: its file is answered as gone (STAT_GONE), as the steps' lstat by that path answers,
 * so that the walk says it cannot be mirrored (walk.ts notUtf8) instead of listing a file
 * that no later call can open.
 */
static bool valid_utf8(const unsigned char *p) {
  while (*p) {
    unsigned char c = *p;
    if (c < 0x80) {
      p++;
      continue;
    }
    int n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (n < 0) return false;
    for (int k = 1; k <= n; k++)
      if ((p[k] & 0xc0) != 0x80) return false;
    if (c == 0xe0 && p[1] < 0xa0) return false; /* overlong */
    if (c == 0xed && p[1] > 0x9f) return false; /* a surrogate */
    if (c == 0xf0 && p[1] < 0x90) return false; /* overlong */
    if (c == 0xf4 && p[1] > 0x8f) return false; /* past U+10FFFF */
    p += n + 1;
  }
  return true;
}

static void free_entries(entry *list, size_t n) {
  for (size_t i = 0; i < n; i++) free(list[i].name);
  free(list);
}

static napi_value js_list_folder(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!call_args(env, info, 5, argv, "listFolder(path, noFollow, flags, stopIndex, progressIndex)")) return NULL;
  char path[4097];
  size_t path_len = 0;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len) != napi_ok) {
    napi_throw_type_error(env, NULL, "path: a string");
    return NULL;
  }
  if (path_len >= sizeof path - 1) return throw_errno(env, ENAMETOOLONG, "open", path);
  bool no_follow = false;
  napi_get_value_bool(env, argv[1], &no_follow);
  napi_typedarray_type ta_type;
  size_t ta_len = 0;
  void *ta_data = NULL;
  uint32_t stop_index = 0, progress_index = 0;
  if (napi_get_typedarray_info(env, argv[2], &ta_type, &ta_len, &ta_data, NULL, NULL) != napi_ok || ta_type != napi_int32_array ||
      napi_get_value_uint32(env, argv[3], &stop_index) != napi_ok || napi_get_value_uint32(env, argv[4], &progress_index) != napi_ok ||
      stop_index >= ta_len || progress_index >= ta_len) {
    napi_throw_type_error(env, NULL, "flags: an Int32Array holding stopIndex and progressIndex");
    return NULL;
  }
  int32_t *flags = (int32_t *)ta_data;
#define STOPPED() (__atomic_load_n(&flags[stop_index], __ATOMIC_SEQ_CST) != 0)
#define MOVED() ((void)__atomic_add_fetch(&flags[progress_index], 1, __ATOMIC_SEQ_CST))
  if (STOPPED()) {
    napi_throw_error(env, "ESTOPPED", "stopped");
    return NULL;
  }

  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_DIRECTORY | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) return throw_errno(env, errno, "open", path);
  char link[64], real[4097];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t real_len = readlink(link, real, sizeof real - 1);
  if (real_len >= 0) real[real_len] = '\0';
  int dup_fd = dup(fd);
  DIR *dir = dup_fd < 0 ? NULL : fdopendir(dup_fd);
  if (dir == NULL) {
    int e = errno;
    if (dup_fd >= 0) close(dup_fd);
    close(fd);
    return throw_errno(env, e, "scandir", path);
  }
  size_t n = 0, cap = 64;
  entry *list = malloc(cap * sizeof *list);
  int read_error = list == NULL ? ENOMEM : 0;
  for (;;) {
    if (read_error) break;
    errno = 0;
    struct dirent *d = readdir(dir);
    if (d == NULL) {
      read_error = errno;
      break;
    }
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    if (n == cap) {
      entry *grown = realloc(list, cap * 2 * sizeof *list);
      if (grown == NULL) {
        read_error = ENOMEM;
        break;
      }
      list = grown;
      cap *= 2;
    }
    list[n].name = strdup(d->d_name);
    if (list[n].name == NULL) {
      read_error = ENOMEM;
      break;
    }
    list[n].type = d->d_type == DT_UNKNOWN ? 255 : type_of_dirent(d->d_type);
    n++;
  }
  closedir(dir);
  MOVED();
  if (read_error) {
    free_entries(list, n);
    close(fd);
    return throw_errno(env, read_error, "scandir", path);
  }
  qsort(list, n, sizeof *list, by_bytes);

  napi_value names, types_buf, types, stats_buf, stats, errors = NULL;
  uint8_t *type_data = NULL;
  double *stat_data = NULL;
  napi_create_array_with_length(env, n, &names);
  napi_create_arraybuffer(env, n, (void **)&type_data, &types_buf);
  napi_create_typedarray(env, napi_uint8_array, n, types_buf, 0, &types);
  napi_create_arraybuffer(env, n * STAT_FIELDS * sizeof(double), (void **)&stat_data, &stats_buf);
  napi_create_typedarray(env, napi_float64_array, n * STAT_FIELDS, stats_buf, 0, &stats);
  for (size_t i = 0; i < n * STAT_FIELDS; i++) stat_data[i] = NAN;
  uint32_t error_count = 0;
  for (size_t i = 0; i < n; i++) {
    napi_value name;
    napi_create_string_utf8(env, list[i].name, NAPI_AUTO_LENGTH, &name);
    napi_set_element(env, names, (uint32_t)i, name);
    unsigned char type = list[i].type;
    if (type != ENTRY_FILE && type != 255) {
      type_data[i] = type;
      continue;
    }
    if (STOPPED()) {
      free_entries(list, n);
      close(fd);
      napi_throw_error(env, "ESTOPPED", "stopped");
      return NULL;
    }
    double *o = stat_data + i * STAT_FIELDS;
    if (type == ENTRY_FILE && !valid_utf8((const unsigned char *)list[i].name)) {
      type_data[i] = ENTRY_FILE;
      o[STAT_SIZE] = STAT_GONE;
      continue;
    }
    struct stat st;
    int r = fstatat(fd, list[i].name, &st, AT_SYMLINK_NOFOLLOW);
    int e = r < 0 ? errno : 0;
    MOVED();
    if (type == 255) {
      /* The listing did not say (DT_UNKNOWN): the stat does, as node:fs's Dirent asks lstat. */
      type = r < 0 ? ENTRY_OTHER : type_of_mode(st.st_mode);
      type_data[i] = type;
      if (type != ENTRY_FILE) continue;
    }
    type_data[i] = ENTRY_FILE;
    if (r < 0) {
      if (e == ENOENT || e == ENOTDIR) {
        o[STAT_SIZE] = STAT_GONE;
      } else {
        o[STAT_SIZE] = STAT_FAILED;
        char file[4400], msg[8800];
        snprintf(file, sizeof file, "%s/%s", path, list[i].name);
        describe(msg, sizeof msg, e, "lstat", file);
        if (errors == NULL) napi_create_array(env, &errors);
        napi_value item, index, code, message;
        napi_create_object(env, &item);
        napi_create_uint32(env, (uint32_t)i, &index);
        napi_create_string_utf8(env, errno_name(e), NAPI_AUTO_LENGTH, &code);
        napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &message);
        napi_set_named_property(env, item, "index", index);
        napi_set_named_property(env, item, "code", code);
        napi_set_named_property(env, item, "message", message);
        napi_set_element(env, errors, error_count++, item);
      }
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      o[STAT_SIZE] = STAT_OTHER_TYPE;
      continue;
    }
    o[STAT_SIZE] = (double)st.st_size;
    o[STAT_MTIME] = ms_of(st.st_mtim);
    o[STAT_CTIME] = ms_of(st.st_ctim);
    o[STAT_DEV] = (double)st.st_dev;
    o[STAT_INO] = (double)st.st_ino;
  }
  free_entries(list, n);
  close(fd);

  napi_value out, real_path, undef;
  napi_get_undefined(env, &undef);
  napi_create_object(env, &out);
  if (real_len >= 0) napi_create_string_utf8(env, real, (size_t)real_len, &real_path);
  napi_set_named_property(env, out, "realPath", real_len >= 0 ? real_path : undef);
  napi_set_named_property(env, out, "names", names);
  napi_set_named_property(env, out, "types", types);
  napi_set_named_property(env, out, "stats", stats);
  napi_set_named_property(env, out, "statErrors", errors == NULL ? undef : errors);
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    NATIVE_FUNCTION("listFolder", js_list_folder),
  };
  napi_define_properties(env, exports, 1, props);
  return exports;
}
