#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/env.h"
#include "core/log.h"
#include "runtime/build.h"
#include "runtime/store_bg.h"

/*
 * A job waits until the caller has queued the next one, asks for the stores
 * (drain, release) or READY_S seconds have passed: by then the caller has
 * usually launched the program's kernel, and with PoCL's cache on (its
 * default) the storer's program shares PoCL's cache directory with the
 * caller's, so the binary carries the work-group function that launch
 * compiled, and a process that loads it compiles nothing at its first launch
 * even with PoCL's cache empty.
 */
#define READY_S 2

struct store_job {
  struct store_job *next;
  struct timespec queued; /* CLOCK_REALTIME, for pthread_cond_timedwait */
  struct kiln__dc_req req; /* its strings point into strs */
  char *text, *options, *strs;
  size_t len;
};

struct kiln__storer {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* a job was queued, or stop was set */
  pthread_cond_t idle; /* the queue ran empty */
  struct store_job *head, *tail;
  int busy, stop;
  int flush; /* callers waiting in drain: every job is ready */
  pthread_t thread;
  pid_t pid; /* the process that started the thread: a forked child has no such thread */
  /* Used by the thread only. */
  cl_platform_id platform;
  cl_device_id device;
  cl_context cl;
  kiln_cache *cache;
};

int
kiln__storer_wanted(const kiln_context *ctx)
{
  return ctx->store_bg;
}

static void
job_free(struct store_job *j)
{
  if (!j)
    return;
  free(j->text);
  free(j->options);
  free(j->strs);
  free(j);
}

/* The binary of a program built for dev, or NULL. */
static unsigned char *
binary_of(cl_program prog, size_t *len)
{
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
      size == 0)
    return NULL;
  unsigned char *bin = malloc(size);
  if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    bin = NULL;
  }
  *len = size;
  return bin;
}

static void
run_job(struct kiln__storer *s, const struct store_job *j)
{
  cl_int err = CL_SUCCESS;
  if (!s->cl) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)s->platform, 0};
    s->cl = clCreateContext(props, 1, &s->device, NULL, NULL, &err);
  }
  cl_program prog = NULL;
  if (s->cl) {
    const char *text = j->text;
    prog = clCreateProgramWithSource(s->cl, 1, &text, &j->len, &err);
  }
  if (prog)
    err = clBuildProgram(prog, 1, &s->device, j->options, NULL, NULL);
  size_t len = 0;
  unsigned char *bin = prog && err == CL_SUCCESS ? binary_of(prog, &len) : NULL;
  if (bin)
    kiln__dc_store(s->cache, &j->req, bin, len);
  else {
    kiln__log(KILN__LOG_DEBUG, "kernel cache: background store of %s failed (%d)",
              j->req.key_hex, (int)err);
    kiln__dc_note_store_failure(s->cache);
  }
  free(bin);
  if (prog)
    clReleaseProgram(prog);
}

static void *
storer_main(void *arg)
{
  struct kiln__storer *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->stop)
      pthread_cond_wait(&s->wake, &s->mu);
    struct store_job *j = s->head;
    if (!j)
      break;
    if (!j->next && !s->flush && !s->stop) {
      struct timespec until = j->queued;
      until.tv_sec += READY_S;
      if (pthread_cond_timedwait(&s->wake, &s->mu, &until) != ETIMEDOUT)
        continue; /* woken: look again */
    }
    s->head = j->next;
    if (!s->head)
      s->tail = NULL;
    s->busy = 1;
    pthread_mutex_unlock(&s->mu);
    run_job(s, j);
    job_free(j);
    pthread_mutex_lock(&s->mu);
    s->busy = 0;
    if (!s->head)
      pthread_cond_broadcast(&s->idle);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static struct kiln__storer *
storer_start(kiln_context *ctx)
{
  struct kiln__storer *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->idle, NULL);
  s->platform = ctx->platform;
  s->device = ctx->device;
  s->cache = ctx->cache;
  s->pid = getpid();
  if (pthread_create(&s->thread, NULL, storer_main, s) != 0) {
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return NULL;
  }
  return s;
}

static char *
dup_bytes(const char *p, size_t n)
{
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = 0;
  }
  return d;
}

int
kiln__storer_enqueue(kiln_context *ctx, const struct kiln__dc_req *req, const char *text,
                     size_t len, const char *options)
{
  if (ctx->storer && ctx->storer->pid != getpid())
    return -1;
  struct store_job *j = calloc(1, sizeof *j);
  if (!j)
    return -1;
  j->req = *req;
  size_t total = 0;
  for (int i = 0; i < KILN__DC_NSTR; i++)
    total += strlen(req->str[i]) + 1;
  j->strs = malloc(total);
  j->text = dup_bytes(text, len);
  j->options = strdup(options);
  j->len = len;
  clock_gettime(CLOCK_REALTIME, &j->queued);
  if (!j->strs || !j->text || !j->options) {
    job_free(j);
    return -1;
  }
  char *at = j->strs;
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    size_t n = strlen(req->str[i]) + 1;
    memcpy(at, req->str[i], n);
    j->req.str[i] = at;
    at += n;
  }
  if (!ctx->storer && !(ctx->storer = storer_start(ctx))) {
    job_free(j);
    return -1;
  }
  struct kiln__storer *s = ctx->storer;
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = j;
  else
    s->head = j;
  s->tail = j;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

void
kiln__storer_drain(kiln_context *ctx)
{
  struct kiln__storer *s = ctx->storer;
  if (!s || s->pid != getpid())
    return;
  pthread_mutex_lock(&s->mu);
  s->flush++;
  pthread_cond_signal(&s->wake);
  while (s->head || s->busy)
    pthread_cond_wait(&s->idle, &s->mu);
  s->flush--;
  pthread_mutex_unlock(&s->mu);
}

void
kiln__storer_destroy(kiln_context *ctx)
{
  struct kiln__storer *s = ctx->storer;
  ctx->storer = NULL;
  /* In a forked child the thread and its queue's lock state are the parent's: leave them. */
  if (!s || s->pid != getpid())
    return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  if (s->cl)
    clReleaseContext(s->cl);
  pthread_cond_destroy(&s->idle);
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
