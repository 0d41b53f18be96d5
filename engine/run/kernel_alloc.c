/* The buffers of a library `mlir-rl-tui build` or `tune` writes: its kernel's malloc and free (linked with
   -Wl,--wrap=malloc,--wrap=free) keep freed blocks of 64 KiB and more for the next call.

   A kernel allocates its intermediate tensors and its result on every call and frees them before it
   returns (the result when the caller drops it). glibc serves them from the heap and, when the freed
   blocks sit at its top, gives that memory back to the system: the next call faults every page in again.
   Measured on a ConvNeXt block in a Python process (2.7 MB of buffers a call): 580 page faults and 1.8 ms of
   system time a call, 2.3 ms instead of 0.5. Whether it happens depends on what else the process has on its
   heap, so the same library was fast in one process and four times slower in another. Blocks kept here are
   reused by size, whatever the heap around them: after the first call, none is allocated again.
   `mlir_rl_tui_free` frees a result the same way. At most CACHED blocks are kept (the rest freed). */

#include <malloc.h>
#include <pthread.h>
#include <stddef.h>

#define CACHED 64
#define MIN_BYTES (64 << 10)

extern void *__real_malloc(size_t);
extern void __real_free(void *);

static struct {
  void *ptr;
  size_t bytes; /* malloc_usable_size(ptr); 0: free slot */
} kept[CACHED];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *__wrap_malloc(size_t n) {
  if (n >= MIN_BYTES) {
    void *p = NULL;
    size_t best = (size_t)-1;
    int at = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CACHED; i++) /* the smallest kept block that holds n, within a page of it */
      if (kept[i].bytes >= n && kept[i].bytes - n < 4096 && kept[i].bytes < best) {
        best = kept[i].bytes;
        at = i;
      }
    if (at >= 0) {
      p = kept[at].ptr;
      kept[at].bytes = 0;
      kept[at].ptr = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (p)
      return p;
  }
  return __real_malloc(n);
}

void __wrap_free(void *p) {
  if (!p)
    return;
  size_t bytes = malloc_usable_size(p);
  if (bytes >= MIN_BYTES) {
    int kept_it = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CACHED; i++)
      if (!kept[i].bytes) {
        kept[i].ptr = p;
        kept[i].bytes = bytes;
        kept_it = 1;
        break;
      }
    pthread_mutex_unlock(&lock);
    if (kept_it)
      return;
  }
  __real_free(p);
}

/* The caller's free of a result the kernel allocated (mlir_rl_tui.runtime). */
void mlir_rl_tui_free(void *p) { __wrap_free(p); }
