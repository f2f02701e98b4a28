/* A generic caller of an AOT-compiled function, written only against its generated header.

     cc -DAOT_HEADER='"NAME.h"' -DAOT_NAME=NAME driver.c NAME.o -lm -lpthread
     ./driver IN.bin OUT.bin

   IN.bin holds the arguments' bytes back to back (NAME_ARG_BYTES[i] each); the results are written to
   OUT.bin the same way. The function is called from THREADS threads at once, each with its own scratch and
   result buffers, and every thread's results must be byte-identical (reentrancy). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include AOT_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define SYM(suffix) CAT(AOT_NAME, suffix)
#define NUM_ARGS SYM(_NUM_ARGS)
#define NUM_RESULTS SYM(_NUM_RESULTS)
#define THREADS 4

static void* args[NUM_ARGS + 1];

struct call {
  void* results[NUM_RESULTS + 1];
  void* scratch;
  int rc;
};

static void* aligned(size_t alignment, size_t bytes) {
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = aligned_alloc(alignment, rounded ? rounded : alignment);
  if (p == NULL) { perror("aligned_alloc"); exit(1); }
  return p;
}

static void* run(void* arg) {
  struct call* c = (struct call*)arg;
  c->rc = AOT_NAME((const void* const*)args, c->results, c->scratch);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s IN.bin OUT.bin\n", argv[0]); return 1; }
  FILE* in = fopen(argv[1], "rb");
  if (in == NULL) { perror(argv[1]); return 1; }
  for (int i = 0; i < NUM_ARGS; i++) {
    args[i] = aligned(64, SYM(_ARG_BYTES)[i]);
    if (fread(args[i], 1, SYM(_ARG_BYTES)[i], in) != SYM(_ARG_BYTES)[i]) {
      fprintf(stderr, "%s: short read for argument %d (%s)\n", argv[1], i, SYM(_ARG_TYPE)[i]);
      return 1;
    }
  }
  fclose(in);

  struct call calls[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    calls[t].scratch = aligned(SYM(_SCRATCH_ALIGNMENT), SYM(_SCRATCH_BYTES));
    for (int j = 0; j < NUM_RESULTS; j++) calls[t].results[j] = aligned(64, SYM(_RESULT_BYTES)[j]);
    pthread_create(&threads[t], NULL, run, &calls[t]);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    if (calls[t].rc != 0) { fprintf(stderr, "call %d returned %d\n", t, calls[t].rc); return 1; }
    for (int j = 0; j < NUM_RESULTS; j++)
      if (memcmp(calls[t].results[j], calls[0].results[j], SYM(_RESULT_BYTES)[j]) != 0) {
        fprintf(stderr, "thread %d: result %d differs from thread 0\n", t, j);
        return 1;
      }
  }

  FILE* out = fopen(argv[2], "wb");
  if (out == NULL) { perror(argv[2]); return 1; }
  for (int j = 0; j < NUM_RESULTS; j++) fwrite(calls[0].results[j], 1, SYM(_RESULT_BYTES)[j], out);
  fclose(out);
  printf("ok: %d arguments, %d results, %d bytes of scratch\n", NUM_ARGS, NUM_RESULTS, (int)SYM(_SCRATCH_BYTES));
  return 0;
}
