/*
 * What the modules of native/ share (each is compiled on its own): a module's handle, the
 * External its start/open returned, passed back as a call's first argument; and an entry of
 * a module's table of functions.
 */
#ifndef DSSYNC_NATIVE_MODULE_H
#define DSSYNC_NATIVE_MODULE_H
#include <stdbool.h>
#include <stdio.h>
#include <node_api.h>

/* `v` as a handle, or NULL with a TypeError thrown ("not a handle of the WHAT module"). */
static inline void *unwrap_handle(napi_env env, napi_value v, const char *what) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || p == NULL) {
    char msg[64];
    snprintf(msg, sizeof msg, "not a handle of the %s module", what);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  return p;
}

/* The call's first `n` arguments into `argv`, or false with a TypeError thrown (`usage`). */
static inline bool call_args(napi_env env, napi_callback_info info, size_t n, napi_value *argv, const char *usage) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < n) {
    napi_throw_type_error(env, NULL, usage);
    return false;
  }
  return true;
}

/* The handle of a call that takes nothing else (beat, stop, close). */
static inline void *only_handle(napi_env env, napi_callback_info info, const char *what) {
  napi_value argv[1];
  if (!call_args(env, info, 1, argv, "a handle is required")) return NULL;
  return unwrap_handle(env, argv[0], what);
}
/* One function of a module's exports. */
#define NATIVE_FUNCTION(name, fn) \
  { name, NULL, fn, NULL, NULL, NULL, napi_enumerable, NULL }
#endif
