/*
 * The daemon's watchdog as a thread of its own (src/daemon/watchdog.ts): a hung event loop
 * ends the process, so that systemd or the runtime restarts it.
 *
 * The main thread bumps a counter every second (beat). This thread looks at it every half
 * second; when it has not moved for the timeout, it writes one fatal JSON log line straight to
 * fd 1 (the main thread's logger cannot run) and sends SIGKILL to the process. A plain thread
 * instead of a worker: the same guarantee without a second JavaScript isolate (~9 MB).
 *
 * start(timeoutSeconds, pid) -> handle    beat(handle)    stop(handle): joins the thread
 *
 * The thread blocks every signal (they are the main thread's to handle) and reads the
 * monotonic clock. Node-API version 8, as native/inotify.c.
 */
#define NAPI_VERSION 8
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <node_api.h>
#include "module.h"

#define LOOK_MS 500

typedef struct {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_uint beats;
  int stopping; /* under mu */
  int joined;
  double timeout_ms;
  int pid;
  napi_env env;
} watchdog_t;

static double monotonic_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void fatal(const watchdog_t *w, double silent_ms) {
  struct timespec now;
  struct tm tm;
  char iso[32], line[512];
  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
  int n = snprintf(line, sizeof line,
                   "{\"level\":60,\"time\":\"%s.%03ldZ\",\"pid\":%d,\"msg\":\"watchdog: the event loop has not answered for %.0f s (limit %g s); "
                   "ending the process with SIGKILL so that it is restarted\"}\n",
                   iso, now.tv_nsec / 1000000L, w->pid, silent_ms / 1000, w->timeout_ms / 1000);
  if (n > 0) {
    ssize_t ignored = write(1, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)ignored;
  }
  kill(w->pid, SIGKILL);
}

static void *run(void *arg) {
  watchdog_t *w = arg;
  unsigned last = atomic_load(&w->beats);
  double last_change = monotonic_ms();
  pthread_mutex_lock(&w->mu);
  while (!w->stopping) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += LOOK_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec += 1;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &until);
    if (w->stopping) break;
    unsigned now_beats = atomic_load(&w->beats);
    double now = monotonic_ms();
    if (now_beats != last) {
      last = now_beats;
      last_change = now;
    } else if (now - last_change >= w->timeout_ms) {
      fatal(w, now - last_change);
    }
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static void stop(watchdog_t *w) {
  if (w->joined) return;
  pthread_mutex_lock(&w->mu);
  w->stopping = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  w->joined = 1;
}

static void cleanup(void *arg) {
  stop(arg);
}

static void finalize(napi_env env, void *data, void *hint) {
  watchdog_t *w = data;
  (void)hint;
  if (!w->joined) {
    napi_remove_env_cleanup_hook(env, cleanup, w);
    stop(w);
  }
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], handle;
  double seconds;
  int32_t pid;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_double(env, argv[0], &seconds) != napi_ok || !(seconds > 0) || napi_get_value_int32(env, argv[1], &pid) != napi_ok) {
    napi_throw_type_error(env, NULL, "start(timeoutSeconds > 0, pid)");
    return NULL;
  }
  watchdog_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    napi_throw_error(env, "ENOMEM", "watchdog: out of memory");
    return NULL;
  }
  w->timeout_ms = seconds * 1000;
  w->pid = pid;
  w->env = env;
  atomic_init(&w->beats, 0);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&w->mu, NULL);
  /* The thread starts with every signal blocked: they stay the main thread's. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&w->thread, NULL, run, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (err != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    napi_throw_error(env, "EAGAIN", "watchdog: cannot start its thread");
    return NULL;
  }
  napi_add_env_cleanup_hook(env, cleanup, w);
  napi_create_external(env, w, finalize, NULL, &handle);
  return handle;
}

static napi_value js_beat(napi_env env, napi_callback_info info) {
  watchdog_t *w = only_handle(env, info, "watchdog");
  if (w != NULL) atomic_fetch_add(&w->beats, 1);
  return NULL;
}

static napi_value js_stop(napi_env env, napi_callback_info info) {
  watchdog_t *w = only_handle(env, info, "watchdog");
  if (w != NULL && !w->joined) {
    napi_remove_env_cleanup_hook(env, cleanup, w);
    stop(w);
  }
  return NULL;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
    NATIVE_FUNCTION("start", js_start),
    NATIVE_FUNCTION("beat", js_beat),
    NATIVE_FUNCTION("stop", js_stop),
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
