/* The OpenMP entry points MLIR's OpenMP lowering calls (LLVM's __kmpc_* interface), on GNU OpenMP.

   A library `mlir-rl-tui build` or `tune` writes is linked with this file and libgomp.so.1, so that in a
   PyTorch process its parallel regions run on PyTorch's own OpenMP threads (PyTorch's CPU build ships
   libgomp.so.1; the dynamic loader hands the library the copy already loaded): one team of threads for
   both, where two runtimes' threads, each spinning after its own regions, contended for the same cores.

   MLIR's convert-scf-to-openmp emits one `omp.parallel` with a static `omp.wsloop` per parallel loop nest,
   without a num_threads clause: __kmpc_fork_call, __kmpc_for_static_init_{4,4u,8,8u} (schedule 34, static
   without a chunk; 33, static with a chunk), __kmpc_for_static_fini, __kmpc_barrier and
   __kmpc_global_thread_num; and, in regions engine.rewrite.parallel_regions merged, __kmpc_master and
   __kmpc_end_master around the serial work between two loops (followed by a barrier). The team is
   GOMP_parallel's default: omp_get_max_threads() of the calling thread (torch.set_num_threads, OMP_NUM_THREADS). Iterations are split as LLVM's runtime splits them
   (balanced: a thread's share differs from another's by one iteration at most). */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
extern void GOMP_barrier(void);
extern int omp_get_thread_num(void);
extern int omp_get_num_threads(void);
extern int omp_get_level(void);

/* Regions forked inside another region are run by the forking thread alone, as LLVM's and Intel's runtimes
   (the engine's) run a nested region by default: the region's loops give it every iteration and its
   barriers wait for nobody. PyTorch's GNU OpenMP allows nested teams (max-active-levels unlimited), which
   would put a second team on the same cores. `serial` counts such regions the calling thread is inside. */
static __thread int serial;

typedef struct ident ident_t;
typedef void (*microtask_t)(int32_t *gtid, int32_t *btid, ...);

#define MAX_ARGS 16

struct region {
  microtask_t fn;
  int32_t argc;
  void *args[MAX_ARGS];
};

static void run_region(void *data) {
  struct region *r = data;
  int32_t gtid = serial ? 0 : omp_get_thread_num(), btid = gtid;
  void **a = r->args;
  switch (r->argc) {
  case 0: r->fn(&gtid, &btid); break;
  case 1: r->fn(&gtid, &btid, a[0]); break;
  case 2: r->fn(&gtid, &btid, a[0], a[1]); break;
  case 3: r->fn(&gtid, &btid, a[0], a[1], a[2]); break;
  case 4: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3]); break;
  case 5: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4]); break;
  case 6: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5]); break;
  case 7: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
  case 8: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
  case 9: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
  case 10: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
  case 11: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
  case 12: r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
  case 13:
    r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]);
    break;
  case 14:
    r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]);
    break;
  case 15:
    r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13],
          a[14]);
    break;
  default:
    r->fn(&gtid, &btid, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13],
          a[14], a[15]);
    break;
  }
}

void __kmpc_fork_call(ident_t *loc, int32_t argc, microtask_t fn, ...) {
  (void)loc;
  struct region r;
  if (argc < 0 || argc > MAX_ARGS) {
    fprintf(stderr, "mlir-rl-tui: a parallel region with %d captured values (at most %d)\n", argc, MAX_ARGS);
    abort();
  }
  r.fn = fn;
  r.argc = argc;
  va_list ap;
  va_start(ap, fn);
  for (int i = 0; i < argc; i++)
    r.args[i] = va_arg(ap, void *);
  va_end(ap);
  if (serial || omp_get_level() > 0) {
    serial++;
    run_region(&r);
    serial--;
    return;
  }
  GOMP_parallel(run_region, &r, 0, 0);
}

int32_t __kmpc_global_thread_num(ident_t *loc) {
  (void)loc;
  return serial ? 0 : omp_get_thread_num();
}

void __kmpc_barrier(ident_t *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
  if (!serial)
    GOMP_barrier();
}

/* The team's first thread runs a master block: the one that forked the region (GNU OpenMP's thread 0). */
int32_t __kmpc_master(ident_t *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
  return serial || omp_get_thread_num() == 0;
}

void __kmpc_end_master(ident_t *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
}

void __kmpc_for_static_fini(ident_t *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
}

/* This thread's iterations of [*lower, *upper] (inclusive) by `incr`: LLVM's runtime's rule for schedule
   34 (balanced) and 33 (chunks of `chunk` dealt round-robin, *stride the distance between a thread's). */
#define STATIC_INIT(NAME, T, ST, UT)                                                                         \
  void NAME(ident_t *loc, int32_t gtid, int32_t sched, int32_t *last, T *lower, T *upper, ST *stride,          \
            ST incr, ST chunk) {                                                                             \
    (void)loc;                                                                                               \
    (void)gtid;                                                                                              \
    UT nth = serial ? 1 : (UT)omp_get_num_threads(), tid = serial ? 0 : (UT)omp_get_thread_num();            \
    if (incr > 0 ? (*upper < *lower) : (*lower < *upper)) { /* no iteration at all */                       \
      if (last) *last = 0;                                                                                   \
      *stride = incr;                                                                                        \
      return;                                                                                                \
    }                                                                                                        \
    UT trip = incr == 1    ? (UT)(*upper - *lower) + 1                                                      \
              : incr > 0   ? (UT)(*upper - *lower) / (UT)incr + 1                                            \
                           : (UT)(*lower - *upper) / (UT)(-incr) + 1;                                        \
    if (nth <= 1) {                                                                                          \
      if (last) *last = 1;                                                                                   \
      *stride = incr > 0 ? (ST)(*upper - *lower + 1) : -(ST)(*lower - *upper + 1);                           \
      return;                                                                                                \
    }                                                                                                        \
    if (sched == 33) {                                                                                       \
      if (chunk < 1) chunk = 1;                                                                              \
      ST span = chunk * incr;                                                                                \
      *stride = span * (ST)nth;                                                                              \
      *lower = *lower + (T)(span * (ST)tid);                                                                 \
      *upper = *lower + (T)span - (T)incr;                                                                   \
      if (last) *last = tid == ((trip - 1) / (UT)chunk) % nth;                                               \
      return;                                                                                                \
    }                                                                                                        \
    if (trip < nth) {                                                                                        \
      if (tid < trip)                                                                                        \
        *upper = *lower = *lower + (T)(tid * (UT)incr);                                                      \
      else                                                                                                   \
        *lower = *upper + (T)incr;                                                                           \
      if (last) *last = tid == trip - 1;                                                                     \
    } else {                                                                                                 \
      UT small = trip / nth, extras = trip % nth;                                                            \
      *lower += (T)((UT)incr * (tid * small + (tid < extras ? tid : extras)));                               \
      *upper = *lower + (T)(small * (UT)incr) - (tid < extras ? 0 : (T)incr);                                \
      if (last) *last = tid == nth - 1;                                                                      \
    }                                                                                                        \
    *stride = (ST)trip;                                                                                      \
  }

STATIC_INIT(__kmpc_for_static_init_4, int32_t, int32_t, uint32_t)
STATIC_INIT(__kmpc_for_static_init_4u, uint32_t, int32_t, uint32_t)
STATIC_INIT(__kmpc_for_static_init_8, int64_t, int64_t, uint64_t)
STATIC_INIT(__kmpc_for_static_init_8u, uint64_t, int64_t, uint64_t)
