/*
 * cltrace: an LD_PRELOAD shim that shows where a program's OpenCL time goes (docs/linalg.md,
 * "Where the time goes: cltrace"). Not installed.
 *
 *   CLTRACE_OUT=trace.txt LD_PRELOAD=build/bench/libcltrace.so build/tools/kiln bench ...
 *
 * It wraps the enqueue, wait, buffer and kernel-object entry points of libOpenCL, so it sees
 * every caller in the process, CLBlast included (CLBlast calls the same ICD loader symbols).
 * Queues are created with CL_QUEUE_PROFILING_ENABLE; every command gets an event (the shim
 * makes one when the caller passed NULL and releases it itself), and the events are read when
 * the program waits anyway (clFinish, clWaitForEvents, a blocking transfer) or, if too many
 * pile up, once they have completed, so the shim adds no synchronisation of its own.
 *
 * At exit it prints one row per kernel name or transfer kind: calls, device ms (sum of
 * START..END), idle ms (device idle time just before the command's start, after the previous
 * command ended: the bubbles that host work, read-backs and launch latency leave), host
 * enqueue ms (time spent inside the enqueue call), host blocking ms (time a blocking call or a
 * wait spent in the driver); then the wall time from the first OpenCL call to exit, the
 * device busy time (union of all commands' intervals) and the device span (first start to last
 * end). CLTRACE_OUT names a file (default stderr); CLTRACE_CSV names a file that gets one line
 * per command (name, start_ns, end_ns relative to the first start, host enqueue ns).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* the project builds for 1.2; the shim also wraps 2.0's clCreateCommandQueueWithProperties */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXNAMES 1024
#define NAMELEN 64
#define PENDING_MAX 8192

struct stat_row {
  char name[NAMELEN];
  uint64_t calls;
  uint64_t dev_ns;
  uint64_t idle_ns;
  uint64_t enq_ns;   /* inside the enqueue call */
  uint64_t block_ns; /* blocking calls and waits */
  uint64_t bytes;    /* transfers and allocations */
};

struct rec {
  uint64_t start, end, enq;
  int name;
};

struct pend {
  cl_event ev;
  int name;
  uint64_t enq;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct stat_row rows[MAXNAMES];
static int nrows;
static struct rec *recs;
static size_t nrecs, caprecs;
static struct pend pend[PENDING_MAX];
static size_t npend;
static uint64_t t_first;
static int started;
static uint64_t lost_events; /* events without profiling information */

static uint64_t
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* dlsym's object pointer to a function pointer without the pedantic cast */
#define REAL(fn)                                                                                   \
  static __typeof__(&fn) real_##fn;                                                               \
  if (!real_##fn) {                                                                                \
    void *p_ = dlsym(RTLD_NEXT, #fn);                                                              \
    memcpy(&real_##fn, &p_, sizeof p_);                                                            \
  }

static void report(void);

/* A run cut short by timeout(1) (SIGTERM) or ^C still reports what it has read so far. */
static volatile sig_atomic_t in_signal;
static struct sigaction prev_term, prev_int;

static void
on_signal(int sig)
{
  in_signal = 1;
  report();
  /* then whatever was there before (the default: die of the signal) */
  sigaction(sig, sig == SIGTERM ? &prev_term : &prev_int, NULL);
  raise(sig);
}

/* Installed before the program runs; handlers installed later (LLVM's, in PoCL's compiler)
 * keep it as their previous handler and call it after their own cleanup. */
__attribute__((constructor)) static void
install_signals(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &prev_term);
  sigaction(SIGINT, &sa, &prev_int);
}

static int
name_index(const char *name)
{
  for (int i = 0; i < nrows; i++)
    if (strncmp(rows[i].name, name, NAMELEN - 1) == 0)
      return i;
  if (nrows == MAXNAMES)
    return MAXNAMES - 1; /* the last row collects the overflow */
  snprintf(rows[nrows].name, NAMELEN, "%s", name);
  return nrows++;
}

/* Locked. The first call of the process starts the wall clock and registers the report after
 * the driver's own exit handlers were registered, so that it runs before them. */
static void
start(void)
{
  if (started)
    return;
  started = 1;
  t_first = now_ns();
  atexit(report);
}

static void
host_time(const char *name, uint64_t t0, uint64_t bytes, int blocking)
{
  uint64_t dt = now_ns() - t0;
  pthread_mutex_lock(&mu);
  start();
  struct stat_row *r = &rows[name_index(name)];
  r->calls++;
  r->bytes += bytes;
  if (blocking)
    r->block_ns += dt;
  else
    r->enq_ns += dt;
  pthread_mutex_unlock(&mu);
}

/* Locked. Reads a completed event into the records and releases it. */
static void
resolve(struct pend *p)
{
  REAL(clGetEventProfilingInfo);
  REAL(clReleaseEvent);
  cl_ulong s = 0, e = 0;
  if (real_clGetEventProfilingInfo(p->ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) !=
          CL_SUCCESS ||
      real_clGetEventProfilingInfo(p->ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL) !=
          CL_SUCCESS) {
    lost_events++;
  } else {
    if (nrecs == caprecs) {
      size_t cap = caprecs ? 2 * caprecs : 65536;
      struct rec *n = realloc(recs, cap * sizeof *n);
      if (n) {
        recs = n;
        caprecs = cap;
      }
    }
    if (nrecs < caprecs)
      recs[nrecs++] = (struct rec){.start = s, .end = e, .enq = p->enq, .name = p->name};
    rows[p->name].dev_ns += e > s ? e - s : 0;
  }
  real_clReleaseEvent(p->ev);
}

/* Locked. all: every pending event has completed (after clFinish or at exit); otherwise only
 * those whose status says so are read. */
static void
drain(int all)
{
  REAL(clGetEventInfo);
  REAL(clWaitForEvents);
  size_t keep = 0;
  for (size_t i = 0; i < npend; i++) {
    cl_int st = CL_COMPLETE;
    if (all)
      real_clWaitForEvents(1, &pend[i].ev);
    else if (real_clGetEventInfo(pend[i].ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                                 NULL) != CL_SUCCESS)
      st = CL_COMPLETE;
    if (st == CL_COMPLETE || st < 0)
      resolve(&pend[i]);
    else
      pend[keep++] = pend[i];
  }
  npend = keep;
}

/* Records a command's event (the caller's, retained, or the shim's own). */
static void
track(const char *name, cl_event ev, int own, uint64_t enq_ns, uint64_t bytes)
{
  REAL(clRetainEvent);
  REAL(clWaitForEvents);
  if (!ev)
    return;
  if (!own)
    real_clRetainEvent(ev);
  pthread_mutex_lock(&mu);
  start();
  int i = name_index(name);
  rows[i].calls++;
  rows[i].enq_ns += enq_ns;
  rows[i].bytes += bytes;
  if (npend == PENDING_MAX)
    drain(0);
  if (npend == PENDING_MAX) { /* everything still queued: wait for the oldest */
    real_clWaitForEvents(1, &pend[0].ev);
    drain(0);
  }
  pend[npend++] = (struct pend){.ev = ev, .name = i, .enq = enq_ns};
  pthread_mutex_unlock(&mu);
}

static void
after_sync(void)
{
  pthread_mutex_lock(&mu);
  drain(0);
  pthread_mutex_unlock(&mu);
}

static int
cmp_start(const void *a, const void *b)
{
  const struct rec *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

static int
cmp_row(const void *a, const void *b)
{
  const struct stat_row *x = a, *y = b;
  uint64_t tx = x->dev_ns + x->idle_ns + x->block_ns, ty = y->dev_ns + y->idle_ns + y->block_ns;
  return tx > ty ? -1 : tx < ty;
}

static void
report(void)
{
  static int reported;
  /* from the signal handler the lock may be held by the interrupted thread, and the driver
   * may be mid-call: no waiting on events there, only what was already read */
  int locked = in_signal ? pthread_mutex_trylock(&mu) == 0 : pthread_mutex_lock(&mu) == 0;
  if (reported) {
    if (locked)
      pthread_mutex_unlock(&mu);
    return;
  }
  reported = 1;
  uint64_t wall = now_ns() - t_first;
  if (!in_signal)
    drain(1);
  else if (locked)
    drain(0); /* what has completed; the driver might be mid-call: run it under timeout -k */
  qsort(recs, nrecs, sizeof *recs, cmp_start);
  uint64_t busy = 0, span = 0, end = 0, first = nrecs ? recs[0].start : 0;
  const char *csvp = getenv("CLTRACE_CSV");
  FILE *csv = csvp ? fopen(csvp, "w") : NULL;
  if (csv)
    fprintf(csv, "name,start_ns,end_ns,enqueue_ns\n");
  for (size_t i = 0; i < nrecs; i++) {
    struct rec *r = &recs[i];
    if (i > 0 && r->start > end)
      rows[r->name].idle_ns += r->start - end;
    uint64_t s = r->start > end ? r->start : end;
    if (r->end > s)
      busy += r->end - s;
    if (r->end > end)
      end = r->end;
    if (csv)
      fprintf(csv, "%s,%llu,%llu,%llu\n", rows[r->name].name,
              (unsigned long long)(r->start - first), (unsigned long long)(r->end - first),
              (unsigned long long)r->enq);
  }
  if (csv)
    fclose(csv);
  span = nrecs ? end - first : 0;
  const char *outp = getenv("CLTRACE_OUT");
  FILE *out = outp ? fopen(outp, "w") : NULL;
  if (!out)
    out = stderr;
  qsort(rows, (size_t)nrows, sizeof *rows, cmp_row);
  fprintf(out, "cltrace: %-40s %8s %10s %10s %10s %10s %10s\n", "name", "calls", "device_ms",
          "idle_ms", "enqueue_ms", "blocked_ms", "MiB");
  for (int i = 0; i < nrows; i++) {
    struct stat_row *r = &rows[i];
    fprintf(out, "cltrace: %-40s %8llu %10.3f %10.3f %10.3f %10.3f %10.1f\n", r->name,
            (unsigned long long)r->calls, r->dev_ns * 1e-6, r->idle_ns * 1e-6, r->enq_ns * 1e-6,
            r->block_ns * 1e-6, r->bytes / 1048576.0);
  }
  fprintf(out,
          "cltrace: wall %.3f ms (first OpenCL call to exit), device busy %.3f ms, device span "
          "%.3f ms (idle %.3f ms), %zu commands timed, %llu without profiling\n",
          wall * 1e-6, busy * 1e-6, span * 1e-6, (span - busy) * 1e-6, nrecs,
          (unsigned long long)lost_events);
  if (in_signal)
    fprintf(out, "cltrace: cut short by a signal: commands still queued are not counted\n");
  if (out != stderr)
    fclose(out);
  if (locked)
    pthread_mutex_unlock(&mu);
}

/* ---- queues: profiling on ---- */

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueue(cl_context context, cl_device_id device, cl_command_queue_properties props,
                     cl_int *err)
{
  REAL(clCreateCommandQueue);
  return real_clCreateCommandQueue(context, device, props | CL_QUEUE_PROFILING_ENABLE, err);
}

CL_API_ENTRY cl_command_queue CL_API_CALL
clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
                                   const cl_queue_properties *props, cl_int *err)
{
  REAL(clCreateCommandQueueWithProperties);
  cl_queue_properties p[32];
  int n = 0, have = 0;
  for (int i = 0; props && props[i] && n < 28; i += 2) {
    p[n] = props[i];
    p[n + 1] = props[i + 1];
    if (props[i] == CL_QUEUE_PROPERTIES) {
      p[n + 1] |= CL_QUEUE_PROFILING_ENABLE;
      have = 1;
    }
    n += 2;
  }
  if (!have) {
    p[n++] = CL_QUEUE_PROPERTIES;
    p[n++] = CL_QUEUE_PROFILING_ENABLE;
  }
  p[n] = 0;
  return real_clCreateCommandQueueWithProperties(context, device, p, err);
}

/* ---- commands ---- */

#define EV_IN cl_event own_ = NULL, *evp_ = event ? event : &own_
#define EV_OUT(name, bytes)                                                                        \
  do {                                                                                             \
    if (r_ == CL_SUCCESS)                                                                          \
      track(name, *evp_, event == NULL, now_ns() - t0_, bytes);                                    \
  } while (0)

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint dim, const size_t *off,
                       const size_t *gws, const size_t *lws, cl_uint nwait, const cl_event *wait,
                       cl_event *event)
{
  REAL(clEnqueueNDRangeKernel);
  REAL(clGetKernelInfo);
  char name[NAMELEN] = "?";
  real_clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
  name[NAMELEN - 1] = 0;
  EV_IN;
  uint64_t t0_ = now_ns();
  cl_int r_ = real_clEnqueueNDRangeKernel(queue, kernel, dim, off, gws, lws, nwait, wait, evp_);
  EV_OUT(name, 0);
  return r_;
}

/* A blocking transfer also counts its wait as "blocked"; its events are read afterwards. */
#define TRANSFER(name, blocking, bytes, call)                                                      \
  EV_IN;                                                                                           \
  uint64_t t0_ = now_ns();                                                                         \
  cl_int r_ = call;                                                                                \
  if (blocking) {                                                                                  \
    host_time("(blocking " name ")", t0_, 0, 1);                                                   \
    EV_OUT(name, bytes);                                                                           \
    after_sync();                                                                                  \
  } else {                                                                                         \
    EV_OUT(name, bytes);                                                                           \
  }                                                                                                \
  return r_

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueReadBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, size_t off, size_t size,
                    void *ptr, cl_uint nwait, const cl_event *wait, cl_event *event)
{
  REAL(clEnqueueReadBuffer);
  TRANSFER("read", blocking, size,
           real_clEnqueueReadBuffer(q, buf, blocking, off, size, ptr, nwait, wait, evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueWriteBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking, size_t off, size_t size,
                     const void *ptr, cl_uint nwait, const cl_event *wait, cl_event *event)
{
  REAL(clEnqueueWriteBuffer);
  TRANSFER("write", blocking, size,
           real_clEnqueueWriteBuffer(q, buf, blocking, off, size, ptr, nwait, wait, evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueReadBufferRect(cl_command_queue q, cl_mem buf, cl_bool blocking, const size_t *bo,
                        const size_t *ho, const size_t *reg, size_t brp, size_t bsp, size_t hrp,
                        size_t hsp, void *ptr, cl_uint nwait, const cl_event *wait,
                        cl_event *event)
{
  REAL(clEnqueueReadBufferRect);
  TRANSFER("read_rect", blocking, reg[0] * reg[1] * reg[2],
           real_clEnqueueReadBufferRect(q, buf, blocking, bo, ho, reg, brp, bsp, hrp, hsp, ptr,
                                        nwait, wait, evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueWriteBufferRect(cl_command_queue q, cl_mem buf, cl_bool blocking, const size_t *bo,
                         const size_t *ho, const size_t *reg, size_t brp, size_t bsp, size_t hrp,
                         size_t hsp, const void *ptr, cl_uint nwait, const cl_event *wait,
                         cl_event *event)
{
  REAL(clEnqueueWriteBufferRect);
  TRANSFER("write_rect", blocking, reg[0] * reg[1] * reg[2],
           real_clEnqueueWriteBufferRect(q, buf, blocking, bo, ho, reg, brp, bsp, hrp, hsp, ptr,
                                         nwait, wait, evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t so, size_t dof,
                    size_t size, cl_uint nwait, const cl_event *wait, cl_event *event)
{
  REAL(clEnqueueCopyBuffer);
  TRANSFER("copy", 0, size, real_clEnqueueCopyBuffer(q, src, dst, so, dof, size, nwait, wait, evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so,
                        const size_t *dof, const size_t *reg, size_t srp, size_t ssp, size_t drp,
                        size_t dsp, cl_uint nwait, const cl_event *wait, cl_event *event)
{
  REAL(clEnqueueCopyBufferRect);
  TRANSFER("copy_rect", 0, reg[0] * reg[1] * reg[2],
           real_clEnqueueCopyBufferRect(q, src, dst, so, dof, reg, srp, ssp, drp, dsp, nwait, wait,
                                        evp_));
}

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueFillBuffer(cl_command_queue q, cl_mem buf, const void *pat, size_t psize, size_t off,
                    size_t size, cl_uint nwait, const cl_event *wait, cl_event *event)
{
  REAL(clEnqueueFillBuffer);
  TRANSFER("fill", 0, size,
           real_clEnqueueFillBuffer(q, buf, pat, psize, off, size, nwait, wait, evp_));
}

/* ---- waits ---- */

CL_API_ENTRY cl_int CL_API_CALL
clFinish(cl_command_queue q)
{
  REAL(clFinish);
  uint64_t t0 = now_ns();
  cl_int r = real_clFinish(q);
  host_time("(clFinish)", t0, 0, 1);
  after_sync();
  return r;
}

CL_API_ENTRY cl_int CL_API_CALL
clWaitForEvents(cl_uint n, const cl_event *evs)
{
  REAL(clWaitForEvents);
  uint64_t t0 = now_ns();
  cl_int r = real_clWaitForEvents(n, evs);
  host_time("(clWaitForEvents)", t0, 0, 1);
  after_sync();
  return r;
}

/* ---- objects: allocations and kernel objects per call are fixed costs too ---- */

CL_API_ENTRY cl_mem CL_API_CALL
clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host, cl_int *err)
{
  REAL(clCreateBuffer);
  uint64_t t0 = now_ns();
  cl_mem m = real_clCreateBuffer(context, flags, size, host, err);
  host_time("(clCreateBuffer)", t0, size, 0);
  return m;
}

CL_API_ENTRY cl_int CL_API_CALL
clReleaseMemObject(cl_mem m)
{
  REAL(clReleaseMemObject);
  uint64_t t0 = now_ns();
  cl_int r = real_clReleaseMemObject(m);
  host_time("(clReleaseMemObject)", t0, 0, 0);
  return r;
}

CL_API_ENTRY cl_kernel CL_API_CALL
clCreateKernel(cl_program p, const char *name, cl_int *err)
{
  REAL(clCreateKernel);
  uint64_t t0 = now_ns();
  cl_kernel k = real_clCreateKernel(p, name, err);
  host_time("(clCreateKernel)", t0, 0, 0);
  return k;
}

CL_API_ENTRY cl_int CL_API_CALL
clBuildProgram(cl_program p, cl_uint ndev, const cl_device_id *devs, const char *opts,
               void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
  REAL(clBuildProgram);
  uint64_t t0 = now_ns();
  cl_int r = real_clBuildProgram(p, ndev, devs, opts, notify, user);
  host_time("(clBuildProgram)", t0, 0, 1);
  return r;
}
