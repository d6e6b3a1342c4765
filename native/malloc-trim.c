/*
 * glibc's malloc_trim(0), for the daemon at rest (src/malloc-trim.ts, called by
 * src/daemon/reclaim.ts after a full pass's collections).
 *
 * glibc gives a freed block back to the system only at the top of its heap; the free runs
 * below a block still in use stay resident. After a restart over 300,000 files they are
 * ~13 MB of a 160 MB daemon at rest (docs/performance.md, "Session 29"). malloc_trim(0)
 * returns every free page of every arena (madvise), whatever lies above it.
 *
 * trim() -> true when memory was given back; false where the C library is not glibc.
 * Node-API version 8, as native/inotify.c.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include "module.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value js_trim(napi_env env, napi_callback_info info) {
  napi_value out;
  (void)info;
#ifdef __GLIBC__
  napi_get_boolean(env, malloc_trim(0) == 1, &out);
#else
  napi_get_boolean(env, false, &out);
#endif
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    NATIVE_FUNCTION("trim", js_trim),
  };
  napi_define_properties(env, exports, 1, props);
  return exports;
}
