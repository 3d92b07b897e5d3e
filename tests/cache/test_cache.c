/*
 * Cache suite: the promises P1-P17 of docs/cache.md, mostly against the file
 * layer with fake device identities (no compiler needed), plus end-to-end
 * runs through the real library in fresh processes.
 *
 * Process rules: this binary never touches OpenCL itself. File-layer tests
 * fork children (crash, race, privilege-drop and disk-full tests), which is
 * safe because no OpenCL runtime has started threads here; everything that
 * needs OpenCL runs in a re-executed copy of this binary (--child MODE),
 * which reports on stdout. Children never call ck_assert: with CK_FORK=no a
 * failing assertion would unwind into the child's copy of the runner.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kiln_cl_sources.h"
#include "runtime/build.h"
#include "runtime/disk_cache.h"
#include "runtime/family.h"
#include "runtime/runtime.h"
#include "spawn_child.h"

#define NOBODY 65534

/* ------------------------------------------------------------ helpers */

static const struct kiln__dc_ident ident_a = {"Fake Platform", "OpenCL 3.0 fake 1.0", "Fake Device",
                                              "OpenCL 3.0 fake", "1.2.3", 0x1234u, 64};
static const char src_text[] = "kernel void k(global float *x) { x[get_global_id(0)] *= 2; }\n";
static const char src_opts[] = "-cl-std=CL1.2 -DT=float -DKILN_DT_F32=1";
/* A MAC key that is not the cache directory's: all a forger without DIR/key can use. */
static const uint8_t forger_key[KILN__DC_KEY_BYTES] = {0x5a, 0xa5, 0x5a, 0xa5, 0x13, 0x37};

static void
req_for(struct kiln__dc_req *r, const struct kiln__dc_ident *id, const char *opts, int variant)
{
  static char texts[64][96];
  snprintf(texts[variant % 64], sizeof texts[0], "%s/* variant %d */", src_text, variant);
  kiln__dc_req_init(r, id, "fake", texts[variant % 64], strlen(texts[variant % 64]), opts);
}

/* Payload bytes that encode the key and length, so a torn or misplaced read is detectable. */
static void
fill_payload(const struct kiln__dc_req *r, uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(r->key[i % 16] ^ (uint8_t)(i * 131u + (i >> 8)));
}

static int
payload_ok(const struct kiln__dc_req *r, const void *p, size_t n, size_t want)
{
  if (n != want)
    return 0;
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (uint8_t)(r->key[i % 16] ^ (uint8_t)(i * 131u + (i >> 8))))
      return 0;
  return 1;
}

static int
store_n(kiln_cache *c, const struct kiln__dc_req *r, size_t n)
{
  uint8_t *p = malloc(n);
  fill_payload(r, p, n);
  int rc = kiln__dc_store(c, r, p, n);
  free(p);
  return rc;
}

/* Lookup: 1 hit with exactly the expected payload, 0 otherwise; *found gets the result kind. */
static int
hit_ok(kiln_cache *c, const struct kiln__dc_req *r, size_t n, enum kiln__dc_found *found)
{
  void *buf;
  const void *p;
  size_t len;
  enum kiln__dc_found f = kiln__dc_lookup(c, r, 0, &buf, &p, &len);
  if (found)
    *found = f;
  int ok = f == KILN__DC_HIT && payload_ok(r, p, len, n);
  free(buf);
  return ok;
}

static void
entry_path(const char *dir, const struct kiln__dc_req *r, char *out, size_t len)
{
  snprintf(out, len, "%s/v%u/%.2s/%.30s.kbin", dir, kiln__dc_format(), r->key_hex,
           r->key_hex + 2);
}

static kiln_cache *
open_on(const char *dir, uint64_t max)
{
  kiln_cache *c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, max);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* Counts regular files with kiln entry names under dir/v<F> and sums their sizes. */
static uint64_t walk_n, walk_bytes, walk_temps;

static int
walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)ftw;
  const char *base = strrchr(path, '/') + 1;
  size_t n = strlen(base);
  if (flag == FTW_F && S_ISREG(st->st_mode)) {
    if (n == 35 && strcmp(base + 30, ".kbin") == 0) {
      walk_n++;
      walk_bytes += (uint64_t)st->st_size;
    } else if (strstr(base, ".kbin.tmp.")) {
      walk_temps++;
    }
  }
  return 0;
}

static void
walk_dir(const char *dir)
{
  char v[4200];
  snprintf(v, sizeof v, "%s/v%u", dir, kiln__dc_format());
  walk_n = walk_bytes = walk_temps = 0;
  nftw(v, walk_one, 16, FTW_PHYS);
}

static size_t
count_all_files(const char *dir)
{
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "find '%s' -mindepth 1 | wc -l", dir);
  FILE *f = popen(cmd, "r");
  size_t n = 0;
  if (f) {
    if (fscanf(f, "%zu", &n) != 1)
      n = 0;
    pclose(f);
  }
  return n;
}

typedef int (*child_fn)(void *arg);

/* Runs fn in a forked child (as uid nobody when asked and running as root); returns the wait status. */
static int
in_child(child_fn fn, void *arg, int as_nobody)
{
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (as_nobody && geteuid() == 0 &&
        (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
      _exit(98);
    _exit(fn(arg));
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return st;
}

#define CHILD_OK(call)                                                                      \
  do {                                                                                      \
    int child_st_ = (call);                                                                 \
    ck_assert_msg(WIFEXITED(child_st_) && WEXITSTATUS(child_st_) == 0,                      \
                  "child failed: status 0x%x (exit %d)", child_st_,                         \
                  WIFEXITED(child_st_) ? WEXITSTATUS(child_st_) : -1);                      \
  } while (0)

/* A temp dir the nobody user can use: traversable parent, child dir owned by nobody when root. */
static char *
nobody_dir(char **parent)
{
  *parent = harness_tempdir();
  chmod(*parent, 0711);
  size_t len = strlen(*parent) + 8;
  char *d = malloc(len);
  ck_assert_ptr_nonnull(d);
  snprintf(d, len, "%s/c", *parent);
  mkdir(d, 0700);
  if (geteuid() == 0 && chown(d, NOBODY, NOBODY) != 0)
    ck_abort_msg("chown: %s", strerror(errno));
  return d;
}

static void
backdate(const char *path, time_t seconds_ago)
{
  struct timespec ts[2];
  clock_gettime(CLOCK_REALTIME, &ts[0]);
  ts[0].tv_sec -= seconds_ago;
  ts[1] = ts[0];
  utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

static void
sleep_ms(long ms)
{
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
}

/* ------------------------------------------------------------ format and key (P1, P12, P13) */

START_TEST(format_golden_bytes)
{
  /* If this fails the on-disk format changed: bump KILN__DC_FORMAT and update the bytes. */
  struct kiln__dc_req r;
  kiln__dc_req_init(&r, &ident_a, "fake", "src", 3, "-DX=1");
  /* The kiln version is part of every entry and its key; pin it for the golden bytes. */
  r.str[KILN__DC_KILN_VERSION] = "0.1.0";
  kiln__dc_req_rekey(&r);
  uint8_t mac_key[KILN__DC_KEY_BYTES];
  for (size_t i = 0; i < sizeof mac_key; i++)
    mac_key[i] = (uint8_t)i;
  uint8_t *b;
  size_t n = kiln__dc_serialize(&r, "BIN", 3, 1700000000, mac_key, &b);
  static const char golden[] =
      "4b494c4e4b42494e" "02000000" "bd000000" "00000000" "34120000" "40000000" "08000000"
      "0300000000000000" "00f1536500000000"
      "bcd80b6b51e28a28940962a8fdbef359" /* key */
      "50ca1943360d8a4683093789725c4c92" /* XXH3-128 of "src" */
      "0d000000" "46616b6520506c6174666f726d"
      "13000000" "4f70656e434c20332e302066616b6520312e30"
      "0b000000" "46616b6520446576696365"
      "0f000000" "4f70656e434c20332e302066616b65"
      "05000000" "312e322e33"
      "05000000" "302e312e30"
      "05000000" "2d44583d31"
      "04000000" "66616b65"
      "42494e" /* payload */
      "8e2891cc28193bb4839c60adf2982d6aeec6fa17858fb8b863c31c08ff65c8a9"; /* MAC of the rest */
  char hex[1024];
  ck_assert_uint_lt(n * 2, sizeof hex);
  for (size_t i = 0; i < n; i++)
    sprintf(hex + 2 * i, "%02x", b[i]);
  ck_assert_str_eq(hex, golden);
  struct kiln__dc_header h;
  const char *why = "";
  /* The trailer is keyed BLAKE2b-256 of everything before it, as docs/cache.md says. */
  uint8_t mac[32];
  crypto_generichash(mac, sizeof mac, b, n - 32, mac_key, sizeof mac_key);
  ck_assert_int_eq(memcmp(mac, b + n - 32, 32), 0);
  ck_assert_int_eq(kiln__dc_parse(b, n, n, 1, KILN__DC_FORMAT, mac_key, &h, &why), 0);
  ck_assert_uint_eq(h.payload_size, 3);
  ck_assert_int_eq(memcmp(h.payload, "BIN", 3), 0);
  ck_assert_int_eq(h.created, 1700000000);
  ck_assert_uint_eq(h.len[KILN__DC_OPTIONS], 5);
  free(b);
  /* An entry always carries a binary; flags are reserved and refused when set. */
  ck_assert_uint_eq(kiln__dc_serialize(&r, "", 0, 1700000000, mac_key, &b), 0);
  /* No key, no entry: nothing unauthenticated is ever written, nor accepted. */
  ck_assert_uint_eq(kiln__dc_serialize(&r, "BIN", 3, 1700000000, NULL, &b), 0);
  n = kiln__dc_serialize(&r, "BIN", 3, 1700000000, mac_key, &b);
  ck_assert_int_eq(kiln__dc_parse(b, n, n, 1, KILN__DC_FORMAT, NULL, &h, &why), -1);
  ck_assert_ptr_nonnull(strstr(why, "MAC"));
  mac_key[0] ^= 1;
  ck_assert_int_eq(kiln__dc_parse(b, n, n, 1, KILN__DC_FORMAT, mac_key, &h, &why), -1);
  ck_assert_ptr_nonnull(strstr(why, "MAC mismatch"));
  mac_key[0] ^= 1;
  b[16] = 1;
  ck_assert_int_eq(kiln__dc_parse(b, n, n, 0, KILN__DC_FORMAT, NULL, &h, &why), -1);
  ck_assert_ptr_nonnull(strstr(why, "flags"));
  free(b);
}
END_TEST

START_TEST(key_covers_every_input)
{
  struct kiln__dc_ident ids[8];
  for (int i = 0; i < 8; i++)
    ids[i] = ident_a;
  ids[1].platform_name = "Other Platform";
  ids[2].platform_version = "OpenCL 3.0 fake 1.1";
  ids[3].device_name = "Other Device";
  ids[4].device_version = "OpenCL 2.0 fake";
  ids[5].driver_version = "1.2.4";
  ids[6].vendor_id = 0x1235;
  ids[7].address_bits = 32;
  struct kiln__dc_req r[16];
  int n = 0;
  for (int i = 0; i < 8; i++)
    kiln__dc_req_init(&r[n++], &ids[i], "fake", src_text, strlen(src_text), src_opts);
  kiln__dc_req_init(&r[n++], &ident_a, "fake", src_text, strlen(src_text),
                    "-cl-std=CL1.2 -DT=float -DKILN_DT_F32=1 -DX=1"); /* a define */
  kiln__dc_req_init(&r[n++], &ident_a, "fake", src_text, strlen(src_text),
                    "-cl-std=CL2.0 -DT=float -DKILN_DT_F32=1"); /* -cl-std */
  kiln__dc_req_init(&r[n++], &ident_a, "fake", src_text, strlen(src_text),
                    "-DT=float -cl-std=CL1.2 -DKILN_DT_F32=1"); /* order: not canonicalised */
  kiln__dc_req_init(&r[n++], &ident_a, "fake", src_text, strlen(src_text) - 1, src_opts); /* text */
  kiln__dc_req_init(&r[n++], &ident_a, "other", src_text, strlen(src_text), src_opts); /* name */
  kiln__dc_set_format(KILN__DC_FORMAT + 1);
  kiln__dc_req_init(&r[n++], &ident_a, "fake", src_text, strlen(src_text), src_opts);
  kiln__dc_set_format(KILN__DC_FORMAT);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      ck_assert_msg(strcmp(r[i].key_hex, r[j].key_hex) != 0, "inputs %d and %d share a key", i, j);
  struct kiln__dc_req again;
  kiln__dc_req_init(&again, &ident_a, "fake", src_text, strlen(src_text), src_opts);
  ck_assert_str_eq(again.key_hex, r[0].key_hex);
  ck_assert_uint_eq(strlen(again.key_hex), 32);
}
END_TEST

START_TEST(uncacheable_options_and_untrusted_identity)
{
  ck_assert(kiln__options_uncacheable("-I/usr/include"));
  ck_assert(kiln__options_uncacheable("-DT=float -I /tmp/x"));
  ck_assert(kiln__options_uncacheable("\t-Iinc"));
  ck_assert(!kiln__options_uncacheable("-DT=float -DNAME=-I"));
  ck_assert(!kiln__options_uncacheable("-cl-std=CL1.2 -DKILN_FP64=1"));
  ck_assert(!kiln__options_uncacheable(""));

  kiln_device_info info;
  memset(&info, 0, sizeof info);
  strcpy(info.name, "Dev");
  strcpy(info.platform_name, "Plat");
  strcpy(info.driver_version, "3.1");
  struct kiln__dc_ident id;
  const char *why = NULL;
  ck_assert(kiln__cache_identity(&info, &id, &why));
  ck_assert_str_eq(id.driver_version, "3.1");
  info.driver_version[0] = 0;
  ck_assert(!kiln__cache_identity(&info, &id, &why));
  ck_assert_ptr_nonnull(strstr(why, "driver version"));
  strcpy(info.driver_version, " Unknown");
  ck_assert(!kiln__cache_identity(&info, &id, &why));
  strcpy(info.driver_version, "3.1");
  info.name[0] = 0;
  ck_assert(!kiln__cache_identity(&info, &id, &why));
}
END_TEST

/* ------------------------------------------------------------ P1: identity */

START_TEST(identity_mismatch_is_a_miss)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req a;
  req_for(&a, &ident_a, src_opts, 0);
  ck_assert_int_eq(store_n(c, &a, 1000), 0);
  ck_assert(hit_ok(c, &a, 1000, NULL));

  /* Every identity field, the options and the format version lead to another key: a plain miss. */
  struct kiln__dc_ident ids[7];
  for (int i = 0; i < 7; i++)
    ids[i] = ident_a;
  ids[0].platform_name = "Fake Platform 2";
  ids[1].platform_version = "OpenCL 3.0 fake 2.0";
  ids[2].device_name = "Fake Device 2";
  ids[3].device_version = "OpenCL 1.2 fake";
  ids[4].driver_version = "1.2.3.1";
  ids[5].vendor_id = 1;
  ids[6].address_bits = 32;
  for (int i = 0; i < 7; i++) {
    struct kiln__dc_req b;
    req_for(&b, &ids[i], src_opts, 0);
    enum kiln__dc_found f;
    ck_assert(!hit_ok(c, &b, 1000, &f));
    ck_assert_int_eq(f, KILN__DC_MISS);
  }
  struct kiln__dc_req o;
  req_for(&o, &ident_a, "-cl-std=CL1.2 -DT=double -DKILN_DT_F64=1", 0);
  ck_assert(!hit_ok(c, &o, 1000, NULL));

  /* A foreign entry under a's file name, consistent in itself (valid checksum): refused. */
  struct kiln__dc_req b;
  req_for(&b, &ids[4], src_opts, 0);
  kiln_cache *c2 = open_on(dir, 0);
  ck_assert_int_eq(store_n(c2, &b, 1000), 0);
  char pa[4200], pb[4200];
  entry_path(dir, &a, pa, sizeof pa);
  entry_path(dir, &b, pb, sizeof pb);
  ck_assert_int_eq(rename(pb, pa), 0);
  kiln_cache_stats st0, st1;
  kiln_cache_stats_get(c, &st0);
  enum kiln__dc_found f;
  ck_assert(!hit_ok(c, &a, 1000, &f));
  ck_assert_int_eq(f, KILN__DC_BAD);
  kiln_cache_stats_get(c, &st1);
  ck_assert_uint_eq(st1.session.corrupt, st0.session.corrupt + 1);

  /* A hand-edited identity byte (driver version "1.2.3" -> "1.2.4") without a new checksum: refused. */
  ck_assert_int_eq(store_n(c, &a, 1000), 0);
  FILE *fp = fopen(pa, "r+b");
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, fp);
  char *hit = memmem(buf, n, "1.2.3", 5);
  ck_assert_ptr_nonnull(hit);
  fseek(fp, (long)(hit - buf) + 4, SEEK_SET);
  fputc('4', fp);
  fclose(fp);
  ck_assert(!hit_ok(c, &a, 1000, &f));
  ck_assert_int_eq(f, KILN__DC_BAD);
  /* The rebuild overwrites it and the next lookup hits with the right bytes. */
  ck_assert_int_eq(store_n(c, &a, 1000), 0);
  ck_assert(hit_ok(c, &a, 1000, NULL));
  kiln_cache_close(c);
  kiln_cache_close(c2);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P3: corruption */

enum damage {
  FLIP_HEADER, FLIP_PAYLOAD, FLIP_CHECKSUM, TRUNC_0, TRUNC_1, TRUNC_HEADER, TRUNC_LAST,
  APPEND_GARBAGE, EMPTY_DIR, SYMLINK, FIFO, DAMAGE_COUNT
};
static const char *const damage_names[] = {"flip header", "flip payload", "flip checksum",
                                           "truncate 0", "truncate 1", "truncate header-1",
                                           "truncate n-1", "append garbage", "directory",
                                           "symlink", "fifo"};

static void
flip(const char *path, long off)
{
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, off, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, off, SEEK_SET);
  fputc(ch ^ 0x40, f);
  fclose(f);
}

static void
apply_damage(const char *path, enum damage d, const char *elsewhere)
{
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  long n = (long)st.st_size;
  FILE *f = fopen(path, "rb");
  uint8_t hdr[16];
  ck_assert_uint_eq(fread(hdr, 1, 16, f), 16);
  fclose(f);
  long hsize = hdr[12] | hdr[13] << 8 | hdr[14] << 16 | (long)hdr[15] << 24;
  switch (d) {
  case FLIP_HEADER: flip(path, 90); break;
  case FLIP_PAYLOAD: flip(path, hsize + 5); break;
  case FLIP_CHECKSUM: flip(path, n - 1); break;
  case TRUNC_0: ck_assert_int_eq(truncate(path, 0), 0); break;
  case TRUNC_1: ck_assert_int_eq(truncate(path, 1), 0); break;
  case TRUNC_HEADER: ck_assert_int_eq(truncate(path, hsize - 1), 0); break;
  case TRUNC_LAST: ck_assert_int_eq(truncate(path, n - 1), 0); break;
  case APPEND_GARBAGE: {
    FILE *a = fopen(path, "ab");
    fputs("garbage!", a);
    fclose(a);
    break;
  }
  case EMPTY_DIR:
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    break;
  case SYMLINK:
    /* Points at a valid entry elsewhere: following it would be a hit with foreign bytes. */
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(symlink(elsewhere, path), 0);
    break;
  case FIFO:
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    break;
  case DAMAGE_COUNT: break;
  }
}

START_TEST(corrupt_entries_miss_then_heal)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  for (int d = 0; d < DAMAGE_COUNT; d++) {
    struct kiln__dc_req r, other;
    req_for(&r, &ident_a, src_opts, 10 + d);
    req_for(&other, &ident_a, src_opts, 40 + d);
    ck_assert_int_eq(store_n(c, &r, 5000), 0);
    ck_assert_int_eq(store_n(c, &other, 5000), 0);
    char p[4200], po[4200];
    entry_path(dir, &r, p, sizeof p);
    entry_path(dir, &other, po, sizeof po);
    apply_damage(p, (enum damage)d, po);
    kiln_cache_stats s0, s1;
    kiln_cache_stats_get(c, &s0);
    enum kiln__dc_found f;
    ck_assert_msg(!hit_ok(c, &r, 5000, &f), "%s: damaged entry was a hit", damage_names[d]);
    ck_assert_msg(f == KILN__DC_BAD, "%s: got %d, not BAD", damage_names[d], (int)f);
    kiln_cache_stats_get(c, &s1);
    ck_assert_uint_eq(s1.session.misses, s0.session.misses + 1);
    ck_assert_uint_eq(s1.session.corrupt, s0.session.corrupt + 1);
    ck_assert_msg(store_n(c, &r, 5000) == 0, "%s: rebuild not stored", damage_names[d]);
    ck_assert_msg(hit_ok(c, &r, 5000, &f), "%s: no hit after rebuild (%d)", damage_names[d],
                  (int)f);
  }
  /* A non-empty directory in the entry's place is not kiln's to delete: the store gives up. */
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, 60);
  char p[4200], inner[4300];
  entry_path(dir, &r, p, sizeof p);
  ck_assert_int_eq(store_n(c, &r, 100), 0);
  unlink(p);
  mkdir(p, 0700);
  snprintf(inner, sizeof inner, "%s/users-file", p);
  fclose(fopen(inner, "w"));
  ck_assert_int_eq(store_n(c, &r, 100), -1);
  ck_assert_int_eq(access(inner, F_OK), 0);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Writes bytes as the file at path (replacing it), as someone with write access to the cache could. */
static void
plant_file(const char *path, const uint8_t *b, size_t n)
{
  unlink(path);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

struct verify_seen {
  int corrupt;
  char problem[256];
};

static int
note_corrupt(const kiln_cache_entry *e, void *user)
{
  struct verify_seen *v = user;
  if (e->state != KILN_CACHE_ENTRY_OK) {
    v->corrupt++;
    snprintf(v->problem, sizeof v->problem, "%s", e->problem);
  }
  return 0;
}

/* P18: only entries authenticated by the directory's key reach the driver. */
START_TEST(forged_entry_is_refused_and_rebuilt)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, 70);
  ck_assert_int_eq(store_n(c, &r, 5000), 0);
  /* The forger's entry: right key and identity (public inputs), their payload, MAC under their key. */
  uint8_t evil[5000];
  memset(evil, 0xcc, sizeof evil);
  uint8_t *b;
  size_t n = kiln__dc_serialize(&r, evil, sizeof evil, (int64_t)time(NULL), forger_key, &b);
  ck_assert_uint_gt(n, 0);
  char p[4200];
  entry_path(dir, &r, p, sizeof p);
  plant_file(p, b, n);

  kiln_cache_stats s0, s1;
  kiln_cache_stats_get(c, &s0);
  void *buf;
  const void *pl;
  size_t len;
  ck_assert_int_eq(kiln__dc_lookup(c, &r, 0, &buf, &pl, &len), KILN__DC_BAD);
  ck_assert_ptr_null(buf);
  ck_assert_ptr_null(pl);
  kiln_cache_stats_get(c, &s1);
  ck_assert_uint_eq(s1.session.corrupt, s0.session.corrupt + 1);
  ck_assert_uint_eq(s1.session.hits, s0.session.hits);

  /* Verification reports it; reading it for an export and importing it are refused. */
  struct verify_seen v = {0};
  KOK(kiln_cache_foreach_entry(c, KILN_CACHE_VERIFY, note_corrupt, &v));
  ck_assert_int_eq(v.corrupt, 1);
  ck_assert_msg(strstr(v.problem, "MAC mismatch"), "problem: %s", v.problem);
  void *data;
  size_t size;
  KEXPECT(kiln_cache_entry_read(c, r.key_hex, &data, &size), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "MAC mismatch"));
  KEXPECT(kiln_cache_entry_write(c, b, n, NULL), KILN_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(kiln_last_error(), "MAC mismatch"));

  /* The rebuild overwrites it, and the entry is served again. */
  ck_assert_int_eq(store_n(c, &r, 5000), 0);
  ck_assert(hit_ok(c, &r, 5000, NULL));

  /* verify --fix removes a forgery. */
  plant_file(p, b, n);
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(c, 1, &vr));
  ck_assert_uint_eq(vr.bad, 1);
  ck_assert_uint_eq(vr.removed, 1);
  ck_assert_int_eq(access(p, F_OK), -1);

  /* Under the sender's key, an entry is accepted and re-authenticated with this directory's key. */
  char key[33];
  KOK(kiln_cache_entry_write_keyed(c, b, n, forger_key, key));
  ck_assert_str_eq(key, r.key_hex);
  ck_assert_int_eq(kiln__dc_lookup(c, &r, 0, &buf, &pl, &len), KILN__DC_HIT);
  ck_assert_uint_eq(len, sizeof evil);
  ck_assert_int_eq(memcmp(pl, evil, len), 0);
  free(buf);
  free(b);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

struct key_race_arg {
  const char *dir;
  int variant;
};

static int
key_race_child(void *arg)
{
  const struct key_race_arg *a = arg;
  kiln_cache *c = kiln__dc_open_degrading(a->dir, KILN_CACHE_ON, 0);
  if (!c || kiln__dc_mode(c) != KILN_CACHE_ON)
    return 2;
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, a->variant);
  int rc = store_n(c, &r, 300) == 0 ? 0 : 3;
  kiln_cache_close(c);
  return rc;
}

/* The key file: made once, private, shared by racing processes; an unusable one switches the cache off. */
START_TEST(mac_key_file_is_private_and_agreed_on)
{
  char *dir = harness_tempdir();
  /* Eight processes open a fresh directory at once: each stores an entry, all must hit. */
  pid_t pids[8];
  struct key_race_arg args[8];
  fflush(stdout);
  for (int i = 0; i < 8; i++) {
    args[i] = (struct key_race_arg){dir, 80 + i};
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0)
      _exit(key_race_child(&args[i]));
  }
  for (int i = 0; i < 8; i++) {
    int st;
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status 0x%x", i, st);
  }
  kiln_cache *c = open_on(dir, 0);
  for (int i = 0; i < 8; i++) {
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, 80 + i);
    ck_assert_msg(hit_ok(c, &r, 300, NULL), "entry of process %d does not verify", i);
  }
  kiln_cache_close(c);
  char kp[4200];
  snprintf(kp, sizeof kp, "%s/key", dir);
  struct stat st;
  ck_assert_int_eq(lstat(kp, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
  ck_assert_uint_eq(st.st_mode & 07777, 0600);
  ck_assert_uint_eq(st.st_size, KILN__DC_KEY_BYTES);
  ck_assert_uint_eq(st.st_uid, geteuid());
  KOK(kiln_cache_open(dir, KILN_CACHE_READONLY, &c));
  char path[4200];
  KOK(kiln_cache_key_path(c, path, sizeof path));
  ck_assert_str_eq(path, kp);
  uint8_t k[KILN_CACHE_KEY_BYTES];
  KOK(kiln_cache_key_read(path, k));
  ck_assert_int_eq(memcmp(k, kiln__dc_mac_key(c), sizeof k), 0);
  kiln_cache_close(c);

  /* A key others may read, a link, or one of the wrong size is refused: the cache is off. */
  for (size_t i = 0; i < 4; i++) {
    char cmd[4 * 4200 + 64];
    snprintf(cmd, sizeof cmd, "cp -p '%s' '%s.save'", kp, kp);
    ck_assert_int_eq(system(cmd), 0);
    if (i == 0)
      snprintf(cmd, sizeof cmd, "chmod 0644 '%s'", kp);
    else if (i == 1)
      snprintf(cmd, sizeof cmd, "chmod 0620 '%s'", kp);
    else if (i == 2)
      snprintf(cmd, sizeof cmd, "mv '%s' '%s.real' && ln -s key.real '%s'", kp, kp, kp);
    else
      snprintf(cmd, sizeof cmd, "printf short > '%s'", kp);
    ck_assert_int_eq(system(cmd), 0);
    c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
    ck_assert_msg(kiln__dc_mode(c) == KILN_CACHE_OFF, "case %zu: mode %d", i, kiln__dc_mode(c));
    kiln_cache_stats s;
    kiln_cache_stats_get(c, &s);
    ck_assert_msg(strstr(s.reason, "key"), "case %zu: reason %s", i, s.reason);
    kiln_cache_close(c);
    KOK(kiln_cache_open(dir, KILN_CACHE_READONLY, &c));
    KEXPECT(kiln_cache_key_path(c, path, sizeof path), KILN_ERR_NOT_FOUND);
    kiln_cache_verify_result vr;
    KEXPECT(kiln_cache_verify(c, 0, &vr), KILN_ERR_UNSUPPORTED);
    kiln_cache_close(c);
    snprintf(cmd, sizeof cmd, "rm -f '%s' '%s.real' && mv '%s.save' '%s'", kp, kp, kp, kp);
    ck_assert_int_eq(system(cmd), 0);
  }
  /* chmod -R a-w of a cache made read-only on purpose leaves a key of mode 0400: still private. */
  ck_assert_int_eq(chmod(kp, 0400), 0);
  c = kiln__dc_open_degrading(dir, KILN_CACHE_READONLY, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_READONLY);
  kiln_cache_close(c);

  /* Read-only without a key: nothing is trusted, so the cache is off; nothing is created. */
  ck_assert_int_eq(unlink(kp), 0);
  c = kiln__dc_open_degrading(dir, KILN_CACHE_READONLY, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_close(c);
  ck_assert_int_eq(access(kp, F_OK), -1);
  /* With the key made anew, the old entries are forgeries as far as the directory knows. */
  c = open_on(dir, 0);
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, 80);
  enum kiln__dc_found f;
  ck_assert(!hit_ok(c, &r, 300, &f));
  ck_assert_int_eq(f, KILN__DC_BAD);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* Every directory level entries are read from is trust-checked, the entry subdirectories too. */
START_TEST(untrusted_entry_subdirectory_is_not_served)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, 90);
  ck_assert_int_eq(store_n(c, &r, 400), 0);
  ck_assert(hit_ok(c, &r, 400, NULL));
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/v%u/%.2s", dir, kiln__dc_format(), r.key_hex);
  int seen;
  for (int round = 0; round < 2; round++) {
    if (round == 0) {
      ck_assert_int_eq(chmod(sub, 0777), 0);
    } else {
      ck_assert_int_eq(chmod(sub, 0700), 0);
      if (geteuid() != 0)
        break; /* a foreign owner needs root to make */
      ck_assert_int_eq(chown(sub, NOBODY, NOBODY), 0);
    }
    enum kiln__dc_found f;
    ck_assert_msg(!hit_ok(c, &r, 400, &f), "round %d: entry served from an untrusted directory",
                  round);
    ck_assert_int_eq(f, KILN__DC_BAD);
    seen = 0;
    struct verify_seen v = {0};
    KOK(kiln_cache_foreach_entry(c, 0, note_corrupt, &v));
    seen = v.corrupt;
    ck_assert_int_eq(seen, 0);
    /* A store does not write into it either. */
    ck_assert_int_eq(store_n(c, &r, 400), -1);
  }
  if (geteuid() == 0)
    ck_assert_int_eq(chown(sub, geteuid(), getegid()), 0);
  ck_assert_int_eq(chmod(sub, 0700), 0);
  ck_assert(hit_ok(c, &r, 400, NULL));
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

struct perm_arg {
  const char *dir;
};

static int
unreadable_entry_child(void *arg)
{
  const char *dir = ((struct perm_arg *)arg)->dir;
  kiln_cache *c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  if (!c || kiln__dc_mode(c) != KILN_CACHE_ON)
    return 2;
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, 61);
  uint8_t p[300];
  fill_payload(&r, p, sizeof p);
  if (kiln__dc_store(c, &r, p, sizeof p) != 0)
    return 3;
  char path[4200];
  entry_path(dir, &r, path, sizeof path);
  chmod(path, 0);
  void *buf;
  const void *pl;
  size_t len;
  if (kiln__dc_lookup(c, &r, 0, &buf, &pl, &len) != KILN__DC_BAD)
    return 4;
  if (kiln__dc_store(c, &r, p, sizeof p) != 0)
    return 5;
  enum kiln__dc_found f = kiln__dc_lookup(c, &r, 0, &buf, &pl, &len);
  int ok = f == KILN__DC_HIT && payload_ok(&r, pl, len, sizeof p);
  free(buf);
  kiln_cache_stats st;
  kiln_cache_stats_get(c, &st);
  kiln_cache_close(c);
  return ok && st.session.corrupt == 1 ? 0 : 6;
}

START_TEST(unreadable_entry_miss_then_heal)
{
  /* Root reads mode-000 files, so the check runs as an unprivileged user. */
  char *parent, *dir = nobody_dir(&parent);
  struct perm_arg a = {dir};
  CHILD_OK(in_child(unreadable_entry_child, &a, 1));
  harness_rmtree(parent);
  free(parent);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P4: killed writers */

struct kill_arg {
  const char *dir;
  int variant;
  size_t size;
};

static int
store_child(void *arg)
{
  struct kill_arg *a = arg;
  kiln_cache *c = kiln__dc_open_degrading(a->dir, KILN_CACHE_ON, 0);
  struct kiln__dc_req r;
  req_for(&r, &ident_a, src_opts, a->variant);
  store_n(c, &r, a->size);
  kiln_cache_close(c);
  return 0;
}

START_TEST(killed_writer_leaves_no_partial_entry)
{
  static const char *const points[] = {"before-write", "mid-write", "before-rename",
                                       "after-rename"};
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req good;
  req_for(&good, &ident_a, src_opts, 1);
  ck_assert_int_eq(store_n(c, &good, 4096), 0);
  for (int i = 0; i < 4; i++) {
    setenv("KILN_TEST_CACHE_KILL_AT", points[i], 1);
    struct kill_arg a = {dir, 20 + i, 1 << 20};
    int st = in_child(store_child, &a, 0);
    unsetenv("KILN_TEST_CACHE_KILL_AT");
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: child was not killed",
                  points[i]);
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, 20 + i);
    enum kiln__dc_found f;
    int hit = hit_ok(c, &r, 1 << 20, &f);
    if (i < 3)
      ck_assert_msg(f == KILN__DC_MISS, "%s: a partial entry is visible (%d)", points[i], (int)f);
    else
      ck_assert_msg(hit, "%s: the renamed entry is not a hit with the right bytes", points[i]);
  }
  ck_assert(hit_ok(c, &good, 4096, NULL));
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(c, 0, &vr));
  ck_assert_uint_eq(vr.bad, 0);
  ck_assert_uint_eq(vr.checked, 2);

  /* Three writers died holding temp files; young ones stay (they may be live writes), old ones go. */
  walk_dir(dir);
  ck_assert_uint_eq(walk_temps, 3);
  kiln_cache_prune_options po = {.temp_files = 1};
  kiln_cache_prune_result pr;
  KOK(kiln_cache_prune(c, &po, &pr));
  ck_assert_uint_eq(pr.temp_files, 0);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "find '%s' -name '*.kbin.tmp.*' -exec touch -d '2 hours ago' {} +",
           dir);
  ck_assert_int_eq(system(cmd), 0);
  po.dry_run = 1;
  KOK(kiln_cache_prune(c, &po, &pr));
  ck_assert_uint_eq(pr.temp_files, 3);
  walk_dir(dir);
  ck_assert_uint_eq(walk_temps, 3);
  po.dry_run = 0;
  KOK(kiln_cache_prune(c, &po, &pr));
  ck_assert_uint_eq(pr.temp_files, 3);
  walk_dir(dir);
  ck_assert_uint_eq(walk_temps, 0);

  /* The after-rename kill skipped the stats update: recount makes the figures exact again. */
  kiln_cache_stats s;
  KOK(kiln_cache_recount(c, &s));
  ck_assert_uint_eq(s.entries, walk_n);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  ck_assert_uint_eq(walk_n, 2);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

static int
store_loop_child(void *arg)
{
  struct kill_arg *a = arg;
  kiln_cache *c = kiln__dc_open_degrading(a->dir, KILN_CACHE_ON, 0);
  for (int i = 0;; i++) {
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, 100 + i % 8);
    store_n(c, &r, a->size + (size_t)(i % 8) * 1000);
  }
  return 0;
}

START_TEST(writer_killed_at_random_points)
{
  char *dir = harness_tempdir();
  srand(12345);
  for (int round = 0; round < 12; round++) {
    struct kill_arg a = {dir, 0, 1 << 20};
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
      _exit(store_loop_child(&a));
    sleep_ms(5 + rand() % 40);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  kiln_cache *c = open_on(dir, 0);
  for (int i = 0; i < 8; i++) {
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, 100 + i);
    enum kiln__dc_found f;
    int ok = hit_ok(c, &r, (1 << 20) + (size_t)i * 1000, &f);
    ck_assert_msg(ok || f == KILN__DC_MISS, "entry %d is neither exact nor absent (%d)", i, (int)f);
  }
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(c, 0, &vr));
  ck_assert_uint_eq(vr.bad, 0);
  kiln_cache_stats s;
  KOK(kiln_cache_recount(c, &s));
  walk_dir(dir);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P5: racing processes */

struct race_arg {
  const char *dir;
  int id;
  uint64_t max;
  double seconds;
};

static double
now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
race_child(void *arg)
{
  struct race_arg *a = arg;
  kiln_cache *c = kiln__dc_open_degrading(a->dir, KILN_CACHE_ON, a->max);
  if (!c || kiln__dc_mode(c) != KILN_CACHE_ON)
    return 2;
  unsigned seed = (unsigned)a->id * 7919u + 1;
  double end = now_s() + a->seconds;
  int hits = 0;
  while (now_s() < end) {
    int k = (int)(rand_r(&seed) % 64);
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, k);
    size_t n = 2000 + (size_t)k * 300;
    void *buf;
    const void *p;
    size_t len;
    enum kiln__dc_found f = kiln__dc_lookup(c, &r, 0, &buf, &p, &len);
    if (f == KILN__DC_HIT) {
      if (!payload_ok(&r, p, len, n))
        return 3; /* torn or foreign data */
      hits++;
    } else if (f == KILN__DC_BAD) {
      return 4; /* a reader saw a partial file */
    }
    free(buf);
    if (f != KILN__DC_HIT || rand_r(&seed) % 4 == 0)
      store_n(c, &r, n);
  }
  kiln_cache_close(c);
  return hits > 0 ? 0 : 5;
}

static void
race(uint64_t max)
{
  char *dir = harness_tempdir();
  pid_t pids[8];
  struct race_arg args[8];
  for (int i = 0; i < 8; i++) {
    args[i] = (struct race_arg){dir, i, max, 1.5};
    fflush(stdout);
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0)
      _exit(race_child(&args[i]));
  }
  for (int i = 0; i < 8; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "racer %d: status 0x%x", i, st);
  }
  kiln_cache *c = open_on(dir, max);
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(c, 0, &vr));
  ck_assert_uint_eq(vr.bad, 0);
  ck_assert_uint_gt(vr.checked, 0);
  walk_dir(dir);
  ck_assert_uint_eq(walk_temps, 0);
  kiln_cache_stats s;
  KOK(kiln_cache_stats_get(c, &s));
  if (max) {
    /* Each store evicts down to the cap; at most the racers' in-flight stores exceed it. */
    ck_assert_uint_le(walk_bytes, max + 8 * 25000);
    ck_assert_uint_gt(s.persistent.evictions, 0);
  }
  ck_assert_uint_gt(s.persistent.stores, 0);
  ck_assert_uint_gt(s.persistent.hits, 0);
  KOK(kiln_cache_recount(c, &s));
  ck_assert_uint_eq(s.entries, walk_n);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}

/* Processes that start together all create the same fresh directories: every one must get mode ON. */
START_TEST(concurrent_first_open)
{
  char *dir = harness_tempdir();
  int gate[2];
  ck_assert_int_eq(pipe(gate), 0);
  pid_t pids[8];
  for (int i = 0; i < 8; i++) {
    fflush(stdout);
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      close(gate[1]);
      char b;
      if (read(gate[0], &b, 1) != 0)
        _exit(3);
      for (int round = 0; round < 40; round++) {
        char d[4200];
        snprintf(d, sizeof d, "%s/r%d/kiln", dir, round);
        kiln_cache *c = kiln__dc_open_degrading(d, KILN_CACHE_ON, 0);
        int ok = c && kiln__dc_mode(c) == KILN_CACHE_ON;
        kiln_cache_close(c);
        if (!ok)
          _exit(2);
      }
      _exit(0);
    }
  }
  close(gate[0]);
  close(gate[1]); /* releases all of them at once */
  for (int i = 0; i < 8; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "opener %d: status 0x%x", i, st);
  }
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(eight_processes_race_on_shared_keys)
{
  race(0);
}
END_TEST

START_TEST(eight_processes_race_with_eviction)
{
  race(200000);
}
END_TEST

/* ------------------------------------------------------------ P6, P7: size */

START_TEST(size_cap_and_lru_order)
{
  char *dir = harness_tempdir();
  const uint64_t max = 64 * 1024;
  kiln_cache *c = open_on(dir, max);
  struct kiln__dc_req r[240];
  for (int i = 0; i < 200; i++) {
    req_for(&r[i], &ident_a, src_opts, i);
    ck_assert_int_eq(store_n(c, &r[i], 4000), 0);
    walk_dir(dir);
    ck_assert_msg(walk_bytes <= max, "after %d stores %llu bytes on disk", i + 1,
                  (unsigned long long)walk_bytes);
  }
  /* Plain LRU so far: the newest entries survive, the oldest went. */
  ck_assert(hit_ok(c, &r[199], 4000, NULL));
  ck_assert(!hit_ok(c, &r[0], 4000, NULL));
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.session.evictions, 200 - walk_n);
  ck_assert_uint_eq(s.entries, walk_n);
  ck_assert_uint_eq(s.bytes, walk_bytes);

  /* Use the five oldest survivors; later stores must evict around them. */
  int survivors[200], ns = 0;
  for (int i = 0; i < 200; i++) {
    char p[4200];
    entry_path(dir, &r[i], p, sizeof p);
    if (access(p, F_OK) == 0)
      survivors[ns++] = i;
  }
  ck_assert_int_ge(ns, 10);
  sleep_ms(20); /* mtime ticks are coarse: keep the touches apart from the stores */
  for (int i = 0; i < 5; i++)
    ck_assert(hit_ok(c, &r[survivors[i]], 4000, NULL));
  sleep_ms(20);
  for (int i = 200; i < 206; i++) {
    req_for(&r[i], &ident_a, src_opts, i);
    ck_assert_int_eq(store_n(c, &r[i], 4000), 0);
  }
  for (int i = 0; i < 5; i++)
    ck_assert_msg(hit_ok(c, &r[survivors[i]], 4000, NULL), "touched entry %d was evicted",
                  survivors[i]);
  /* Entries stored in one clock tick tie on mtime, so which untouched ones went is not fixed. */
  int untouched_left = 0;
  for (int i = 5; i < ns; i++) {
    char p[4200];
    entry_path(dir, &r[survivors[i]], p, sizeof p);
    untouched_left += access(p, F_OK) == 0;
  }
  ck_assert_msg(untouched_left < ns - 5, "no untouched entry was evicted");

  /* An entry larger than the cap is refused, and nothing else is disturbed. */
  kiln_cache_stats_get(c, &s);
  struct kiln__dc_req big;
  req_for(&big, &ident_a, src_opts, 239);
  ck_assert_int_eq(store_n(c, &big, 100000), -1);
  kiln_cache_stats s2;
  kiln_cache_stats_get(c, &s2);
  ck_assert_uint_eq(s2.session.store_failures, s.session.store_failures + 1);
  ck_assert_uint_eq(s2.entries, s.entries);
  ck_assert(hit_ok(c, &r[205], 4000, NULL));
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(recount_after_files_vanish)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req r[10];
  for (int i = 0; i < 10; i++) {
    req_for(&r[i], &ident_a, src_opts, i);
    ck_assert_int_eq(store_n(c, &r[i], 1000 + (size_t)i * 100), 0);
  }
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  walk_dir(dir);
  ck_assert_uint_eq(s.entries, 10);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  for (int i = 0; i < 3; i++) {
    char p[4200];
    entry_path(dir, &r[i], p, sizeof p);
    unlink(p);
  }
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.entries, 10); /* drift, as documented */
  KOK(kiln_cache_recount(c, &s));
  walk_dir(dir);
  ck_assert_uint_eq(s.entries, 7);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  /* Overwriting an entry changes the size by the difference, not by the whole entry. */
  ck_assert_int_eq(store_n(c, &r[5], 3000), 0);
  kiln_cache_stats_get(c, &s);
  walk_dir(dir);
  ck_assert_uint_eq(s.entries, 7);
  ck_assert_uint_eq(s.bytes, walk_bytes);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P8, P9: modes and bad paths */

START_TEST(readonly_mode_serves_hits_and_writes_nothing)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req a, b;
  req_for(&a, &ident_a, src_opts, 1);
  req_for(&b, &ident_a, src_opts, 2);
  ck_assert_int_eq(store_n(c, &a, 3000), 0);
  kiln_cache_close(c);
  char p[4200], stats[4200];
  entry_path(dir, &a, p, sizeof p);
  snprintf(stats, sizeof stats, "%s/v%u/stats", dir, kiln__dc_format());
  backdate(p, 1000);
  struct stat st0, sst0;
  stat(p, &st0);
  stat(stats, &sst0);
  size_t files = count_all_files(dir);

  c = kiln__dc_open_degrading(dir, KILN_CACHE_READONLY, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_READONLY);
  ck_assert(hit_ok(c, &a, 3000, NULL));
  ck_assert(!hit_ok(c, &b, 3000, NULL));
  ck_assert_int_eq(store_n(c, &b, 3000), -1);
  ck_assert_int_eq(kiln__dc_store(c, &b, NULL, 0), -1);
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.session.hits, 1);
  ck_assert_uint_eq(s.session.misses, 1);
  ck_assert_uint_eq(s.session.stores, 0);
  kiln_cache_close(c);
  struct stat st1, sst1;
  stat(p, &st1);
  stat(stats, &sst1);
  ck_assert_int_eq(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec); /* no LRU touch */
  ck_assert_int_eq(sst1.st_mtim.tv_nsec, sst0.st_mtim.tv_nsec); /* no stats write */
  ck_assert_int_eq(sst1.st_ino, sst0.st_ino);
  ck_assert_uint_eq(count_all_files(dir), files);
  /* The public handle refuses writes in read-only mode. */
  kiln_cache *h;
  KOK(kiln_cache_open(dir, KILN_CACHE_READONLY, &h));
  KEXPECT(kiln_cache_stats_zero(h), KILN_ERR_UNSUPPORTED);
  KEXPECT(kiln_cache_clear(h, NULL), KILN_ERR_UNSUPPORTED);
  kiln_cache_close(h);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

static int
unwritable_dir_child(void *arg)
{
  const char *dir = ((struct perm_arg *)arg)->dir;
  kiln_cache *c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  struct kiln__dc_req a, b;
  req_for(&a, &ident_a, src_opts, 1);
  req_for(&b, &ident_a, src_opts, 2);
  uint8_t p[3000];
  fill_payload(&a, p, sizeof p);
  if (kiln__dc_store(c, &a, p, sizeof p) != 0)
    return 2;
  kiln_cache_close(c);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "chmod -R a-w '%s'", dir);
  if (system(cmd) != 0)
    return 3;
  uint64_t w0 = kiln__dc_warnings();
  c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  if (kiln__dc_mode(c) != KILN_CACHE_READONLY)
    return 4; /* an unwritable directory degrades to read-only, not to off */
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  if (!strstr(s.reason, "not writable") || s.requested_mode != KILN_CACHE_ON)
    return 5;
  void *buf;
  const void *pl;
  size_t len;
  int ok = kiln__dc_lookup(c, &a, 0, &buf, &pl, &len) == KILN__DC_HIT &&
           payload_ok(&a, pl, len, sizeof p);
  free(buf);
  if (!ok)
    return 6;
  fill_payload(&b, p, sizeof p);
  if (kiln__dc_store(c, &b, p, sizeof p) != -1)
    return 7;
  kiln_cache_close(c);
  c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  kiln_cache_close(c);
  if (kiln__dc_warnings() != w0 + 1)
    return 8; /* one warning per directory and problem */
  kiln_cache *h;
  if (kiln_cache_open(dir, KILN_CACHE_ON, &h) != KILN_ERR_IO)
    return 9;
  return 0;
}

START_TEST(unwritable_directory_degrades_to_readonly)
{
  char *parent, *dir = nobody_dir(&parent);
  struct perm_arg a = {dir};
  CHILD_OK(in_child(unwritable_dir_child, &a, 1));
  harness_rmtree(parent);
  free(parent);
  free(dir);
}
END_TEST

static int
uncreatable_dir_child(void *arg)
{
  const char *dir = ((struct perm_arg *)arg)->dir;
  chmod(dir, 0500);
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/deeper/kiln", dir);
  uint64_t w0 = kiln__dc_warnings();
  kiln_cache *c = kiln__dc_open_degrading(sub, KILN_CACHE_ON, 0);
  if (kiln__dc_mode(c) != KILN_CACHE_OFF)
    return 2;
  struct kiln__dc_req a;
  req_for(&a, &ident_a, src_opts, 1);
  uint8_t p[100] = {1};
  if (kiln__dc_store(c, &a, p, sizeof p) != -1)
    return 3;
  void *buf;
  const void *pl;
  size_t len;
  if (kiln__dc_lookup(c, &a, 0, &buf, &pl, &len) != KILN__DC_MISS)
    return 4;
  kiln_cache_close(c);
  if (kiln__dc_warnings() != w0 + 1)
    return 5;
  kiln_cache *h;
  if (kiln_cache_open(sub, KILN_CACHE_ON, &h) != KILN_ERR_IO)
    return 6;
  return access(sub, F_OK) == 0 ? 7 : 0;
}

START_TEST(uncreatable_directory_runs_uncached)
{
  char *parent, *dir = nobody_dir(&parent);
  struct perm_arg a = {dir};
  CHILD_OK(in_child(uncreatable_dir_child, &a, 1));
  harness_rmtree(parent);
  free(parent);
  free(dir);
}
END_TEST

START_TEST(bad_paths_and_disabled_mode)
{
  char *tmp = harness_tempdir();
  char file[4200], missing[4200], under_file[4300];
  snprintf(file, sizeof file, "%s/plain-file", tmp);
  snprintf(missing, sizeof missing, "%s/missing", tmp);
  snprintf(under_file, sizeof under_file, "%s/below", file);
  fclose(fopen(file, "w"));
  struct kiln__dc_req a;
  req_for(&a, &ident_a, src_opts, 1);

  /* A regular file as the cache path: off, one warning, no files made. */
  uint64_t w0 = kiln__dc_warnings();
  kiln_cache *c = kiln__dc_open_degrading(file, KILN_CACHE_ON, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  ck_assert_ptr_nonnull(strstr(s.reason, "not a directory"));
  ck_assert_int_eq(store_n(c, &a, 10), -1);
  kiln_cache_close(c);
  c = kiln__dc_open_degrading(file, KILN_CACHE_ON, 0);
  kiln_cache_close(c);
  ck_assert_uint_eq(kiln__dc_warnings(), w0 + 1);
  c = kiln__dc_open_degrading(under_file, KILN_CACHE_ON, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_close(c);
  kiln_cache *h = NULL;
  KEXPECT(kiln_cache_open(file, KILN_CACHE_ON, &h), KILN_ERR_IO);

  /* Read-only on a missing directory: off (nothing to serve), and nothing created. */
  c = kiln__dc_open_degrading(missing, KILN_CACHE_READONLY, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_close(c);
  KEXPECT(kiln_cache_open(missing, KILN_CACHE_READONLY, &h), KILN_ERR_NOT_FOUND);
  ck_assert_int_ne(access(missing, F_OK), 0);

  /* Mode off: no lookups, no stores, no directory. */
  c = kiln__dc_open_degrading(missing, KILN_CACHE_OFF, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  ck_assert_int_eq(store_n(c, &a, 10), -1);
  ck_assert(!hit_ok(c, &a, 10, NULL));
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.session.misses, 0);
  kiln_cache_close(c);
  ck_assert_int_ne(access(missing, F_OK), 0);
  ck_assert_uint_eq(count_all_files(tmp), 1);
  KEXPECT(kiln_cache_open(missing, KILN_CACHE_OFF, &h), KILN_ERR_INVALID_ARGUMENT);

  /* The environment's spelling of the modes. */
  static const struct {
    const char *v;
    kiln_cache_mode m;
  } env[] = {{"off", KILN_CACHE_OFF}, {"0", KILN_CACHE_OFF},           {"ReadOnly", KILN_CACHE_READONLY},
             {"ro", KILN_CACHE_READONLY}, {"on", KILN_CACHE_ON}, {"", KILN_CACHE_ON},
             {"bogus", KILN_CACHE_ON}};
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
    setenv("KILN_CACHE", env[i].v, 1);
    ck_assert_int_eq(kiln__dc_env_mode(), env[i].m);
  }
  unsetenv("KILN_CACHE");
  ck_assert_int_eq(kiln__dc_env_mode(), KILN_CACHE_ON);
  harness_rmtree(tmp);
  free(tmp);
}
END_TEST

START_TEST(size_strings)
{
  static const struct {
    const char *s;
    int ok;
    uint64_t v;
  } t[] = {{"100", 1, 100},          {"64K", 1, 65536},         {"64k", 1, 65536},
           {"512M", 1, 512ull << 20}, {"1G", 1, 1ull << 30},    {"2GiB", 1, 2ull << 30},
           {"3gb", 1, 3ull << 30},   {"1T", 1, 1ull << 40},     {"0", 1, 0},
           {" 7M ", 1, 7ull << 20},  {"1.5G", 0, 0},            {"", 0, 0},
           {"G", 0, 0},              {"-1", 0, 0},              {"12X", 0, 0},
           {"99999999999999T", 0, 0}, {"18446744073709551616", 0, 0},
           /* Caps are int64_t options (KILN_OPT_CACHE_MAX_BYTES): 2^63 and above would read back negative. */
           {"9223372036854775807", 1, INT64_MAX}, {"9223372036854775808", 0, 0},
           {"8388607T", 1, 8388607ull << 40},   {"8388608T", 0, 0},
           {"8589934592G", 0, 0},              {"18446744073709551615", 0, 0}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    uint64_t v = 12345;
    int r = kiln__dc_parse_size(t[i].s, &v);
    ck_assert_msg((r == 0) == t[i].ok, "\"%s\": parse returned %d", t[i].s, r);
    if (t[i].ok)
      ck_assert_msg(v == t[i].v, "\"%s\" gave %llu", t[i].s, (unsigned long long)v);
  }
  setenv("KILN_CACHE_MAX_SIZE", "256M", 1);
  ck_assert_uint_eq(kiln__dc_env_max_bytes(), 256ull << 20);
  setenv("KILN_CACHE_MAX_SIZE", "lots", 1);
  ck_assert_uint_eq(kiln__dc_env_max_bytes(), KILN__DC_DEFAULT_MAX_BYTES);
  uint64_t w0 = kiln__dc_warnings();
  setenv("KILN_CACHE_MAX_SIZE", "8388608T", 1); /* 2^63: a warning and the default */
  ck_assert_uint_eq(kiln__dc_env_max_bytes(), KILN__DC_DEFAULT_MAX_BYTES);
  ck_assert_uint_eq(kiln__dc_warnings(), w0 + 1);
  /* The handle's setter refuses what the option could not hold. */
  char *dir = harness_tempdir();
  kiln_cache *h;
  KOK(kiln_cache_open(dir, KILN_CACHE_READONLY, &h));
  KOK(kiln_cache_set_max_bytes(h, INT64_MAX));
  KEXPECT(kiln_cache_set_max_bytes(h, (uint64_t)INT64_MAX + 1), KILN_ERR_INVALID_ARGUMENT);
  kiln_cache_stats st;
  KOK(kiln_cache_stats_get(h, &st));
  ck_assert_uint_eq(st.max_bytes, INT64_MAX);
  kiln_cache_close(h);
  harness_rmtree(dir);
  free(dir);
  unsetenv("KILN_CACHE_MAX_SIZE");
  ck_assert_uint_eq(kiln__dc_env_max_bytes(), 1ull << 30);
}
END_TEST

/* ------------------------------------------------------------ P10: disk full */

static int
disk_full_child(void *arg)
{
  const char *dir = ((struct perm_arg *)arg)->dir;
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = {200000, 200000};
  if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
    return 2;
  kiln_cache *c = kiln__dc_open_degrading(dir, KILN_CACHE_ON, 0);
  struct kiln__dc_req good, big;
  req_for(&good, &ident_a, src_opts, 1);
  req_for(&big, &ident_a, src_opts, 2);
  if (store_n(c, &big, 1 << 20) != -1)
    return 3;
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  if (s.session.store_failures != 1 || s.session.stores != 0)
    return 4;
  void *buf;
  const void *p;
  size_t len;
  int ok = kiln__dc_lookup(c, &good, 0, &buf, &p, &len) == KILN__DC_HIT &&
           payload_ok(&good, p, len, 50000);
  free(buf);
  kiln_cache_close(c);
  return ok ? 0 : 5;
}

START_TEST(disk_full_keeps_good_entries)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req good;
  req_for(&good, &ident_a, src_opts, 1);
  ck_assert_int_eq(store_n(c, &good, 50000), 0);
  kiln_cache_close(c);
  struct perm_arg a = {dir};
  CHILD_OK(in_child(disk_full_child, &a, 0));
  walk_dir(dir);
  ck_assert_uint_eq(walk_temps, 0);
  ck_assert_uint_eq(walk_n, 1);
  c = open_on(dir, 0);
  ck_assert(hit_ok(c, &good, 50000, NULL));
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P11: resolution and trust */

static void
env_restore(const char *name, const char *saved)
{
  if (saved)
    setenv(name, saved, 1);
  else
    unsetenv(name);
}

START_TEST(directory_resolution_order)
{
  char *saved[3];
  const char *names[3] = {"KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; i++)
    saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
  char buf[4096];
  setenv("KILN_CACHE_DIR", "/k/dir", 1);
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  setenv("HOME", "/h/home", 1);
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/k/dir");
  unsetenv("KILN_CACHE_DIR");
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/x/cache/kiln");
  setenv("XDG_CACHE_HOME", "relative/cache", 1); /* the XDG spec says: ignore */
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/h/home/.cache/kiln");
  unsetenv("XDG_CACHE_HOME");
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/h/home/.cache/kiln");
  unsetenv("HOME");
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  ck_assert_msg(strstr(buf, "/.cache/kiln") && buf[0] == '/', "passwd fallback gave %s", buf);
  setenv("KILN_CACHE_DIR", "rel/kc", 1);
  KOK(kiln_cache_default_dir(buf, sizeof buf));
  char cwd[4096];
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
  ck_assert_str_eq(buf + strlen(cwd), "/rel/kc");
  KEXPECT(kiln_cache_default_dir(buf, 4), KILN_ERR_INVALID_ARGUMENT);

  /* Missing parents are created, each with mode 0700. */
  char *tmp = harness_tempdir();
  char deep[4200];
  snprintf(deep, sizeof deep, "%s/a/b/kiln", tmp);
  setenv("KILN_CACHE_DIR", deep, 1);
  kiln_cache *c = kiln__dc_open_degrading(NULL, KILN_CACHE_ON, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_ON);
  kiln_cache_close(c);
  const char *made[] = {"/a", "/a/b", "/a/b/kiln", "/a/b/kiln/v"};
  for (int i = 0; i < 4; i++) {
    char p[4300];
    snprintf(p, sizeof p, "%s%s", tmp, made[i]);
    if (i == 3)
      snprintf(p + strlen(p), sizeof p - strlen(p), "%u", kiln__dc_format());
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_msg((st.st_mode & 0777) == 0700, "%s has mode %o", p, st.st_mode & 0777);
  }
  for (int i = 0; i < 3; i++) {
    env_restore(names[i], saved[i]);
    free(saved[i]);
  }
  harness_rmtree(tmp);
  free(tmp);
}
END_TEST

START_TEST(setuid_ignores_environment)
{
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer's runtime refuses to start in a setuid process. */
  fprintf(stderr, "setuid_ignores_environment: AddressSanitizer build, skipped\n");
  return;
#endif
  if (geteuid() != 0) {
    /* Making a setuid binary that changes credentials needs root or a second account. */
    fprintf(stderr, "setuid_ignores_environment: not root, skipped\n");
    return;
  }
  char *tmp = harness_tempdir();
  chmod(tmp, 0755);
  char exe[4200], cmd[16384];
  snprintf(exe, sizeof exe, "%s/test_cache_setuid", tmp);
  snprintf(cmd, sizeof cmd, "cp /proc/%d/exe '%s' && chown %d '%s' && chmod 4755 '%s'",
           (int)getpid(), exe, NOBODY, exe, exe);
  ck_assert_int_eq(system(cmd), 0);
  char out[4096];
  const char *args[] = {"default-dir", NULL};
  const char *env[] = {"KILN_CACHE_DIR=/should/be/ignored", "XDG_CACHE_HOME=/ignored/too", NULL};
  int rc = spawn_child(exe, "test_cache", args, env, out, sizeof out);
  ck_assert_msg(rc == 0, "setuid child failed (%d): %s", rc, out);
  if (strstr(out, "setuid=0")) {
    fprintf(stderr, "setuid_ignores_environment: %s is on a nosuid mount, skipped\n", tmp);
    harness_rmtree(tmp);
    free(tmp);
    return;
  }
  ck_assert_msg(strstr(out, "setuid=1"), "unexpected child output: %s", out);
  ck_assert_msg(!strstr(out, "ignored"), "environment honoured under setuid: %s", out);
  ck_assert_msg(strstr(out, "/.cache/kiln"), "unexpected directory: %s", out);
  /* The same binary without the setuid bit honours the environment. */
  rc = spawn_child("/proc/self/exe", "test_cache", args, env, out, sizeof out);
  ck_assert_int_eq(rc, 0);
  ck_assert_msg(strstr(out, "dir=/should/be/ignored"), "environment not honoured: %s", out);
  harness_rmtree(tmp);
  free(tmp);
}
END_TEST

START_TEST(untrusted_directories_are_refused)
{
  char *tmp = harness_tempdir();
  char gw[4200];
  snprintf(gw, sizeof gw, "%s/group-writable", tmp);
  mkdir(gw, 0700);
  chmod(gw, 0770);
  kiln_cache *c = kiln__dc_open_degrading(gw, KILN_CACHE_ON, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  ck_assert_ptr_nonnull(strstr(s.reason, "writable by group or others"));
  kiln_cache_close(c);
  kiln_cache *h = NULL;
  KEXPECT(kiln_cache_open(gw, KILN_CACHE_READONLY, &h), KILN_ERR_IO);
  ck_assert_uint_eq(count_all_files(gw), 0);

  /* A symbolic link as the format directory (planted by someone else) is not followed. */
  char ok[4200], target[4200], link[4300];
  snprintf(ok, sizeof ok, "%s/ok", tmp);
  snprintf(target, sizeof target, "%s/elsewhere", tmp);
  mkdir(ok, 0700);
  mkdir(target, 0700);
  snprintf(link, sizeof link, "%s/v%u", ok, kiln__dc_format());
  ck_assert_int_eq(symlink(target, link), 0);
  c = kiln__dc_open_degrading(ok, KILN_CACHE_ON, 0);
  ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
  kiln_cache_close(c);
  ck_assert_uint_eq(count_all_files(target), 0);

  if (geteuid() == 0) {
    char other[4200];
    snprintf(other, sizeof other, "%s/other-owner", tmp);
    mkdir(other, 0700);
    ck_assert_int_eq(chown(other, NOBODY, NOBODY), 0);
    c = kiln__dc_open_degrading(other, KILN_CACHE_ON, 0);
    ck_assert_int_eq(kiln__dc_mode(c), KILN_CACHE_OFF);
    kiln_cache_stats_get(c, &s);
    ck_assert_ptr_nonnull(strstr(s.reason, "owned by uid 65534"));
    kiln_cache_close(c);
    KEXPECT(kiln_cache_open(other, KILN_CACHE_ON, &h), KILN_ERR_IO);
    ck_assert_uint_eq(count_all_files(other), 0);
  }
  harness_rmtree(tmp);
  free(tmp);
}
END_TEST

/* ------------------------------------------------------------ P12: format versions */

START_TEST(format_bump_invalidates_cleanly)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req r1;
  req_for(&r1, &ident_a, src_opts, 1);
  ck_assert_int_eq(store_n(c, &r1, 2000), 0);
  kiln_cache_close(c);

  kiln__dc_set_format(KILN__DC_FORMAT + 1);
  c = open_on(dir, 0);
  struct kiln__dc_req r2;
  req_for(&r2, &ident_a, src_opts, 1);
  enum kiln__dc_found f;
  ck_assert(!hit_ok(c, &r2, 2000, &f));
  ck_assert_int_eq(f, KILN__DC_MISS); /* a miss, not a corrupt entry or an error */
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.session.corrupt, 0);
  ck_assert_int_eq(store_n(c, &r2, 2000), 0);
  ck_assert(hit_ok(c, &r2, 2000, NULL));
  /* A future format's directory must survive pruning by this (older) reader. */
  char future[4200], old_entry[4200];
  snprintf(future, sizeof future, "%s/v%u", dir, KILN__DC_FORMAT + 5);
  mkdir(future, 0700);
  snprintf(old_entry, sizeof old_entry, "%s/v%u/%.2s/%.30s.kbin", dir, KILN__DC_FORMAT,
           r1.key_hex, r1.key_hex + 2);
  ck_assert_int_eq(access(old_entry, F_OK), 0);
  kiln_cache_prune_options po = {.old_formats = 1, .dry_run = 1};
  kiln_cache_prune_result pr;
  KOK(kiln_cache_prune(c, &po, &pr));
  ck_assert_uint_eq(pr.entries, 1);
  ck_assert_int_eq(access(old_entry, F_OK), 0);
  po.dry_run = 0;
  KOK(kiln_cache_prune(c, &po, &pr));
  ck_assert_uint_eq(pr.entries, 1);
  ck_assert_int_ne(access(old_entry, F_OK), 0);
  ck_assert_int_eq(access(future, F_OK), 0);
  ck_assert(hit_ok(c, &r2, 2000, NULL));
  kiln_cache_close(c);
  kiln__dc_set_format(KILN__DC_FORMAT);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P14: statistics */

START_TEST(stats_are_exact_and_resettable)
{
  char *dir = harness_tempdir();
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req a, b;
  req_for(&a, &ident_a, src_opts, 1);
  req_for(&b, &ident_a, src_opts, 2);
  ck_assert(!hit_ok(c, &a, 500, NULL));   /* miss */
  ck_assert_int_eq(store_n(c, &a, 500), 0); /* store */
  ck_assert(hit_ok(c, &a, 500, NULL));    /* hit */
  ck_assert(hit_ok(c, &a, 500, NULL));    /* hit */
  ck_assert_int_eq(kiln__dc_store(c, &b, "", 0), -1); /* no binary: a store failure */
  char pa[4200];
  entry_path(dir, &a, pa, sizeof pa);
  struct stat st;
  stat(pa, &st);
  uint64_t entry_bytes = (uint64_t)st.st_size;
  void *buf;
  const void *pl;
  size_t len;
  ck_assert_int_eq(kiln__dc_lookup(c, &a, KILN__DC_DEFER_HIT, &buf, &pl, &len), KILN__DC_HIT);
  free(buf);
  kiln__dc_note_rejected(c); /* this hit's binary refused by the driver: miss + rejected */
  kiln__dc_note_uncached(c);
  flip(pa, 100);
  ck_assert(!hit_ok(c, &a, 500, NULL));   /* miss + corrupt */
  kiln_cache_stats s;
  kiln_cache_stats_get(c, &s);
  kiln_cache_counters want = {.hits = 2, .misses = 3, .stores = 1, .corrupt = 1, .rejected = 1,
                              .uncached = 1, .store_failures = 1, .bytes_read = 2 * entry_bytes,
                              .bytes_written = entry_bytes};
  ck_assert_int_eq(memcmp(&s.session, &want, sizeof want), 0);
  ck_assert_int_eq(memcmp(&s.persistent, &want, sizeof want), 0);
  kiln_cache_close(c);

  /* Persistent across handles (processes); a second handle adds to the file. */
  c = open_on(dir, 0);
  kiln_cache_stats_get(c, &s);
  ck_assert_int_eq(memcmp(&s.persistent, &want, sizeof want), 0);
  ck_assert_uint_eq(s.session.misses, 0);
  ck_assert(!hit_ok(c, &a, 500, NULL));
  kiln_cache_close(c);
  c = open_on(dir, 0);
  kiln_cache_stats_get(c, &s);
  ck_assert_uint_eq(s.persistent.misses, 4);
  ck_assert_uint_eq(s.persistent.corrupt, 2);
  ck_assert_uint_eq(s.entries, 1);

  /* Counters of a newer kiln survive an update; zeroing keeps entries and size. */
  char sp[4200];
  snprintf(sp, sizeof sp, "%s/v%u/stats", dir, kiln__dc_format());
  FILE *fp = fopen(sp, "a");
  fputs("future_counter 77\n", fp);
  fclose(fp);
  KOK(kiln_cache_stats_zero(c));
  kiln_cache_stats_get(c, &s);
  kiln_cache_counters zero = {0};
  ck_assert_int_eq(memcmp(&s.persistent, &zero, sizeof zero), 0);
  ck_assert_int_eq(memcmp(&s.session, &zero, sizeof zero), 0);
  ck_assert_uint_eq(s.entries, 1);
  ck_assert_uint_gt(s.bytes, 0);
  ck_assert_int_gt(s.zeroed_at, 0);
  char text[4096] = "";
  fp = fopen(sp, "r");
  size_t n = fread(text, 1, sizeof text - 1, fp);
  text[n] = 0;
  fclose(fp);
  ck_assert_ptr_nonnull(strstr(text, "future_counter 77"));
  walk_dir(dir);
  ck_assert_uint_eq(walk_n, 1);
  kiln_cache_close(c);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ P17: descriptors */

static int
count_fds(void)
{
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

START_TEST(no_descriptors_held)
{
  char *dir = harness_tempdir();
  int before = count_fds();
  kiln_cache *c = open_on(dir, 100000);
  ck_assert_int_le(count_fds(), before + 2);
  for (int i = 0; i < 50; i++) {
    struct kiln__dc_req r;
    req_for(&r, &ident_a, src_opts, i);
    store_n(c, &r, 5000);
    hit_ok(c, &r, 5000, NULL);
  }
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(c, 1, &vr));
  ck_assert_int_le(count_fds(), before + 2);
  kiln_cache_close(c);
  ck_assert_int_eq(count_fds(), before);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ the public inspection API */

struct listing {
  int n, ok, bad;
  char keys[64][33];
  char opts[64][96];
  uint64_t bytes;
};

static int
list_cb(const kiln_cache_entry *e, void *user)
{
  struct listing *l = user;
  if (l->n < 64) {
    strcpy(l->keys[l->n], e->key);
    snprintf(l->opts[l->n], sizeof l->opts[0], "%s", e->options);
  }
  l->n++;
  l->ok += e->state == KILN_CACHE_ENTRY_OK;
  l->bad += e->state != KILN_CACHE_ENTRY_OK;
  l->bytes += e->file_bytes;
  if (e->state == KILN_CACHE_ENTRY_OK) {
    ck_assert_str_eq(e->device_name, "Fake Device");
    ck_assert_str_eq(e->driver_version, "1.2.3");
    ck_assert_str_eq(e->source_name, "fake");
    ck_assert_str_eq(e->kiln_version, kiln_version());
    ck_assert_uint_eq(e->vendor_id, 0x1234);
    ck_assert_uint_eq(e->address_bits, 64);
    ck_assert_uint_eq(e->file_bytes, e->payload_bytes + 80 + 8 * 4 + KILN__DC_TRAILER + strlen("Fake Platform") +
                                         strlen("OpenCL 3.0 fake 1.0") + strlen("Fake Device") +
                                         strlen("OpenCL 3.0 fake") + 5 +
                                         strlen(kiln_version()) + strlen(e->options) + 4);
    ck_assert_int_ge(e->created, time(NULL) - 60);
    ck_assert_uint_eq(strlen(e->source_hash), 32);
  }
  return 0;
}

static int
first_cb(const kiln_cache_entry *e, void *user)
{
  *(kiln_cache_entry_state *)user = e->state;
  return 0;
}

struct match_arg {
  const kiln_device_info *dev;
  int matches;
};

static int
match_cb(const kiln_cache_entry *e, void *user)
{
  struct match_arg *m = user;
  m->matches += kiln_cache_entry_matches_device(e, m->dev);
  return 0;
}

static int
select_f64(const kiln_cache_entry *e, void *user)
{
  (void)user;
  return strstr(e->options, "double") != NULL;
}

static int
count_cb(const kiln_cache_entry *e, void *user)
{
  (void)e;
  (*(int *)user)++;
  return 0;
}

START_TEST(inspection_api)
{
  char *dir = harness_tempdir();
  kiln_cache *h;
  KOK(kiln_cache_open(dir, KILN_CACHE_ON, &h));
  kiln_cache *c = open_on(dir, 0);
  struct kiln__dc_req r[6];
  for (int i = 0; i < 6; i++) {
    req_for(&r[i], &ident_a, i < 4 ? src_opts : "-DT=double", i);
    ck_assert_int_eq(store_n(c, &r[i], 1000 + (size_t)i), 0);
  }
  struct listing l = {0};
  KOK(kiln_cache_foreach_entry(h, KILN_CACHE_VERIFY, list_cb, &l));
  ck_assert_int_eq(l.n, 6);
  ck_assert_int_eq(l.ok, 6);
  walk_dir(dir);
  ck_assert_uint_eq(l.bytes, walk_bytes);
  KEXPECT(kiln_cache_foreach_entry(h, 0x80, list_cb, &l), KILN_ERR_INVALID_ARGUMENT);

  /* Matching against a device description. */
  kiln_device_info dev;
  memset(&dev, 0, sizeof dev);
  strcpy(dev.name, "Fake Device");
  strcpy(dev.platform_name, "Fake Platform");
  strcpy(dev.platform_version, "OpenCL 3.0 fake 1.0");
  strcpy(dev.device_version, "OpenCL 3.0 fake");
  strcpy(dev.driver_version, "1.2.3");
  dev.vendor_id = 0x1234;
  dev.address_bits = 64;
  struct match_arg ma = {&dev, 0};
  KOK(kiln_cache_foreach_entry(h, 0, match_cb, &ma));
  ck_assert_int_eq(ma.matches, 6);
  strcpy(dev.driver_version, "1.2.4");
  ma.matches = 0;
  KOK(kiln_cache_foreach_entry(h, 0, match_cb, &ma));
  ck_assert_int_eq(ma.matches, 0);
  ck_assert(!kiln_cache_entry_matches_device(NULL, &dev));

  kiln_cache_entry_state state = KILN_CACHE_ENTRY_CORRUPT;
  char prefix[33];
  snprintf(prefix, sizeof prefix, "%.32s", r[0].key_hex);
  KOK(kiln_cache_entry_find(h, prefix, first_cb, &state));
  ck_assert_int_eq(state, KILN_CACHE_ENTRY_OK);

  /* Shortest unique prefix works; an ambiguous one (empty) and junk are refused. */
  KEXPECT(kiln_cache_entry_find(h, "", first_cb, &state), KILN_ERR_INVALID_ARGUMENT);
  KEXPECT(kiln_cache_entry_find(h, "xyz", first_cb, &state), KILN_ERR_INVALID_ARGUMENT);
  int found_unique = 0;
  for (size_t len = 1; len <= 32 && !found_unique; len++) {
    snprintf(prefix, len + 1, "%s", r[0].key_hex);
    kiln_status s = kiln_cache_entry_find(h, prefix, first_cb, &state);
    if (s == KILN_OK)
      found_unique = 1;
    else
      ck_assert_int_eq(s, KILN_ERR_INVALID_ARGUMENT);
  }
  ck_assert(found_unique);
  char absent[33];
  snprintf(absent, sizeof absent, "%s", r[0].key_hex);
  absent[31] = absent[31] == '0' ? '1' : '0';
  KEXPECT(kiln_cache_entry_find(h, absent, first_cb, &state), KILN_ERR_NOT_FOUND);

  /* Export and import: the same entry in another directory (under its key), which then hits. */
  void *data;
  size_t size;
  KOK(kiln_cache_entry_read(h, r[1].key_hex, &data, &size));
  char *dir2 = harness_tempdir();
  kiln_cache *h2;
  KOK(kiln_cache_open(dir2, KILN_CACHE_ON, &h2));
  char key[33];
  /* Another directory's entry is authenticated by that directory's key only. */
  KEXPECT(kiln_cache_entry_write(h2, data, size, key), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_cache_entry_write_keyed(h2, data, size, kiln__dc_mac_key(h), key));
  ck_assert_str_eq(key, r[1].key_hex);
  kiln_cache *c2 = open_on(dir2, 0);
  ck_assert(hit_ok(c2, &r[1], 1001, NULL));
  ((uint8_t *)data)[size / 2] ^= 1;
  KEXPECT(kiln_cache_entry_write_keyed(h2, data, size, kiln__dc_mac_key(h), key),
          KILN_ERR_INVALID_ARGUMENT);
  free(data);
  kiln_cache_close(c2);
  kiln_cache_close(h2);
  harness_rmtree(dir2);
  free(dir2);

  /* Verify finds a corrupt entry; --fix removes it and nothing else. */
  char p2[4200];
  entry_path(dir, &r[2], p2, sizeof p2);
  flip(p2, 200);
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(h, 0, &vr));
  ck_assert_uint_eq(vr.checked, 6);
  ck_assert_uint_eq(vr.bad, 1);
  ck_assert_uint_eq(vr.removed, 0);
  KEXPECT(kiln_cache_entry_read(h, r[2].key_hex, &data, &size), KILN_ERR_INVALID_ARGUMENT);
  KOK(kiln_cache_verify(h, 1, &vr));
  ck_assert_uint_eq(vr.removed, 1);
  ck_assert_int_ne(access(p2, F_OK), 0);
  KOK(kiln_cache_verify(h, 0, &vr));
  ck_assert_uint_eq(vr.bad, 0);
  ck_assert_uint_eq(vr.checked, 5);

  /* Prune: by selection (f64 entries), by age (backdated), by size; dry runs change nothing. */
  kiln_cache_prune_options po = {.select = select_f64, .dry_run = 1};
  kiln_cache_prune_result pr;
  int reported = 0;
  po.on_remove = count_cb;
  po.on_remove_user = &reported;
  KOK(kiln_cache_prune(h, &po, &pr));
  ck_assert_uint_eq(pr.entries, 2);
  ck_assert_int_eq(reported, 2);
  walk_dir(dir);
  ck_assert_uint_eq(walk_n, 5);
  po.dry_run = 0;
  KOK(kiln_cache_prune(h, &po, &pr));
  ck_assert_uint_eq(pr.entries, 2);
  walk_dir(dir);
  ck_assert_uint_eq(walk_n, 3);
  char p0[4200];
  entry_path(dir, &r[0], p0, sizeof p0);
  backdate(p0, 3 * 86400);
  kiln_cache_prune_options age = {.older_than_s = 86400};
  KOK(kiln_cache_prune(h, &age, &pr));
  ck_assert_uint_eq(pr.entries, 1);
  ck_assert_int_ne(access(p0, F_OK), 0);
  kiln_cache_prune_options sz = {.max_bytes = 1};
  KOK(kiln_cache_prune(h, &sz, &pr));
  ck_assert_uint_eq(pr.entries, 2);
  kiln_cache_stats s;
  KOK(kiln_cache_stats_get(h, &s));
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.bytes, 0);
  KEXPECT(kiln_cache_prune(h, NULL, &pr), KILN_ERR_INVALID_ARGUMENT);

  /* Remove by key; then clear removes all of kiln's files and nothing of the user's. */
  ck_assert_int_eq(store_n(c, &r[3], 100), 0);
  KOK(kiln_cache_entry_remove(h, r[3].key_hex));
  KEXPECT(kiln_cache_entry_remove(h, r[3].key_hex), KILN_ERR_NOT_FOUND);
  KEXPECT(kiln_cache_entry_remove(h, "abc"), KILN_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(store_n(c, &r[i], 100), 0);
  char user1[4200], user2[4400], userdir[4300];
  snprintf(user1, sizeof user1, "%s/v%u/notes.txt", dir, kiln__dc_format());
  snprintf(userdir, sizeof userdir, "%s/v%u/%.2s", dir, kiln__dc_format(), r[0].key_hex);
  snprintf(user2, sizeof user2, "%s/mine.kbin", userdir);
  fclose(fopen(user1, "w"));
  fclose(fopen(user2, "w"));
  uint64_t removed = 0;
  KOK(kiln_cache_clear(h, &removed));
  ck_assert_uint_ge(removed, 4);
  walk_dir(dir);
  ck_assert_uint_eq(walk_n, 0);
  ck_assert_int_eq(access(user1, F_OK), 0);
  ck_assert_int_eq(access(user2, F_OK), 0);
  char tag[4200];
  snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", dir);
  ck_assert_int_ne(access(tag, F_OK), 0);
  /* Handles stay usable after a clear. */
  ck_assert_int_eq(store_n(c, &r[0], 100), 0);
  ck_assert(hit_ok(c, &r[0], 100, NULL));
  kiln_cache_close(c);
  kiln_cache_close(h);
  KEXPECT(kiln_cache_stats_get(NULL, &s), KILN_ERR_INVALID_HANDLE);
  harness_rmtree(dir);
  free(dir);
}
END_TEST

/* ------------------------------------------------------------ end to end, through OpenCL */

struct run_report {
  int rc;
  unsigned long long hits, misses, stores, corrupt, rejected, uncached;
  int mode, pocl;
  unsigned long long digest;
  char raw[4096];
};

static const char *e2e_cache, *e2e_pocl;

static void
run_child_ops(struct run_report *r, const char *mode, const char *extra_env)
{
  char env_dir[4200], env_pocl[4200];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", e2e_cache);
  snprintf(env_pocl, sizeof env_pocl, "POCL_CACHE_DIR=%s", e2e_pocl);
  const char *env[] = {env_dir, env_pocl, extra_env ? extra_env : "KILN_CACHE", NULL};
  const char *args[] = {mode, NULL};
  memset(r, 0, sizeof *r);
  r->rc = spawn_child("/proc/self/exe", "test_cache", args, env, r->raw, sizeof r->raw);
  const char *line = strstr(r->raw, "RESULT ");
  if (line)
    sscanf(line,
           "RESULT hits=%llu misses=%llu stores=%llu corrupt=%llu rejected=%llu uncached=%llu "
           "mode=%d pocl=%d digest=%llx",
           &r->hits, &r->misses, &r->stores, &r->corrupt, &r->rejected, &r->uncached, &r->mode,
           &r->pocl, &r->digest);
}

/*
 * Starts the ops child without waiting, stdout to a file; used to run
 * several real builds at once. Returns the pid.
 */
static pid_t
start_child_ops(const char *out_path, const char *const *env_overrides)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2); /* a failing child's diagnostics with its output */
  char *argv[] = {(char *)"test_cache", (char *)"--child", (char *)"ops", NULL};
  char **envp = child_env(env_overrides);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  ck_assert_msg(rc == 0, "posix_spawn: %s", strerror(rc));
  return pid;
}

#define RUN_OK(r) ck_assert_msg((r).rc == 0 && strstr((r).raw, "RESULT "), "child failed (%d): %s", (r).rc, (r).raw)

struct find_arg {
  const char *source;
  const char *options; /* a part of the build options */
  char path[4200];
  char key[33];
  int found;
};

static int
find_cb(const kiln_cache_entry *e, void *user)
{
  struct find_arg *a = user;
  if (e->state == KILN_CACHE_ENTRY_OK && strcmp(e->source_name, a->source) == 0 &&
      strstr(e->options, a->options)) {
    snprintf(a->path, sizeof a->path, "%s", e->path);
    memcpy(a->key, e->key, 33);
    a->found++;
  }
  return 0;
}

/* The one stored entry of an embedded source with options containing opts in the e2e cache. */
static struct find_arg
entry_of(const char *source, const char *opts)
{
  struct find_arg a = {.source = source, .options = opts};
  kiln_cache *h;
  KOK(kiln_cache_open(e2e_cache, KILN_CACHE_READONLY, &h));
  KOK(kiln_cache_foreach_entry(h, 0, find_cb, &a));
  kiln_cache_close(h);
  ck_assert_msg(a.found == 1, "%d stored entries for source %s", a.found, source);
  return a;
}

/*
 * Rewrites an entry with a well-formed header around a binary the driver
 * cannot load. With forge, the key (public inputs) is right but the MAC is
 * made under forger_key and the file is written in place, as an attacker
 * who can write the directory would; otherwise it goes in through the
 * import API with the directory's key.
 */
static void
plant_unloadable_binary(const char *key, const char *path, int forge)
{
  kiln_cache *h;
  KOK(kiln_cache_open(e2e_cache, KILN_CACHE_ON, &h));
  void *data;
  size_t size;
  KOK(kiln_cache_entry_read(h, key, &data, &size));
  struct kiln__dc_header hd;
  const char *why = "";
  ck_assert_int_eq(
      kiln__dc_parse(data, size, size, 1, kiln__dc_format(), kiln__dc_mac_key(h), &hd, &why), 0);
  struct kiln__dc_req r;
  memset(&r, 0, sizeof r);
  char strs[KILN__DC_NSTR][1024];
  for (int i = 0; i < KILN__DC_NSTR; i++) {
    snprintf(strs[i], sizeof strs[i], "%.*s", (int)hd.len[i], hd.str[i]);
    r.str[i] = strs[i];
  }
  r.vendor_id = hd.vendor_id;
  r.address_bits = hd.address_bits;
  r.format = hd.format;
  memcpy(r.source_hash, hd.source_hash, 16);
  memcpy(r.key, hd.key, 16);
  uint8_t junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(i * 7 + 3);
  uint8_t *bytes;
  size_t n = kiln__dc_serialize(&r, junk, sizeof junk, (int64_t)time(NULL),
                                forge ? forger_key : kiln__dc_mac_key(h), &bytes);
  ck_assert_uint_gt(n, 0);
  if (forge) {
    KEXPECT(kiln_cache_entry_write(h, bytes, n, NULL), KILN_ERR_INVALID_ARGUMENT);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
  } else {
    char got[33];
    KOK(kiln_cache_entry_write(h, bytes, n, got));
    ck_assert_str_eq(got, key);
  }
  free(bytes);
  free(data);
  kiln_cache_close(h);
}

/* Path and mtime of every file under dir, as one string. */
static void
snapshot(const char *dir, char *out, size_t len)
{
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "find '%s' -printf '%%p %%s %%T@\\n' | sort", dir);
  FILE *f = popen(cmd, "r");
  size_t n = f ? fread(out, 1, len - 1, f) : 0;
  out[n] = 0;
  if (f)
    pclose(f);
}

START_TEST(e2e_cross_process)
{
  char *cache = harness_tempdir(), *pocl = harness_tempdir();
  e2e_cache = cache;
  e2e_pocl = pocl;
  struct run_report r1, r2, r3, r;
  run_child_ops(&r1, "ops", NULL);
  if (r1.rc == 77) {
    fprintf(stderr, "e2e_cross_process: no OpenCL device, skipped\n");
    return;
  }
  RUN_OK(r1);
  ck_assert_uint_eq(r1.hits, 0);
  ck_assert_uint_eq(r1.misses, 2);
  ck_assert_int_eq(r1.mode, KILN_CACHE_ON);
  /*
   * Store policy auto stores on every platform: on PoCL each kernel is a program of its own
   * (docs/cache.md, "Program granularity"), whose binary costs one kernel's compile.
   */
  ck_assert_uint_eq(r1.stores, 2);
  run_child_ops(&r2, "ops", "KILN_CACHE_STORE=always");
  RUN_OK(r2);
  ck_assert_uint_eq(r2.hits, 2);
  ck_assert_uint_eq(r2.stores, 0);
  /* Every op runs twice per process: the disk is asked once per key per process. */
  run_child_ops(&r3, "ops", NULL);
  RUN_OK(r3);
  ck_assert_uint_eq(r3.hits, 2);
  ck_assert_uint_eq(r3.misses, 0);
  ck_assert_uint_eq(r3.stores, 0);
  ck_assert(r1.digest == r2.digest && r2.digest == r3.digest);

  /* A corrupt entry: a miss, rebuilt and replaced (whatever the policy); the next process hits. */
  struct find_arg cast = entry_of("cast", "-DT=float");
  flip(cast.path, 300);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.corrupt, 1);
  ck_assert_uint_eq(r.hits, 1);
  ck_assert_uint_eq(r.stores, 1);
  ck_assert(r.digest == r1.digest);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.hits, 2);

  /* A sound entry whose binary the driver refuses: a rejection, rebuilt from source, healed. */
  /*
   * A forged entry (right key, junk binary, MAC under another key) is never
   * handed to the driver: it is corrupt, not rejected (a driver that saw it
   * would refuse it, or crash), and the rebuild replaces it. PoCL crashed on
   * such entries when a recomputable checksum was all that guarded them.
   */
  plant_unloadable_binary(cast.key, cast.path, 1);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.corrupt, 1);
  ck_assert_uint_eq(r.rejected, 0);
  ck_assert_uint_eq(r.hits, 1);
  ck_assert_uint_eq(r.stores, 1);
  ck_assert(r.digest == r1.digest);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.hits, 2);
  ck_assert_uint_eq(r.corrupt, 0);

  plant_unloadable_binary(cast.key, cast.path, 0);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.rejected, 1);
  ck_assert_uint_eq(r.corrupt, 0);
  ck_assert_uint_eq(r.hits, 1);
  ck_assert_uint_eq(r.misses, 1);
  ck_assert_uint_eq(r.stores, 1);
  ck_assert(r.digest == r1.digest);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.hits, 2);
  ck_assert_uint_eq(r.rejected, 0);

  /* Read-only: hits, and not one byte or timestamp changes. */
  char before[16384], after[16384];
  snapshot(cache, before, sizeof before);
  sleep_ms(20);
  run_child_ops(&r, "ops", "KILN_CACHE=readonly");
  RUN_OK(r);
  ck_assert_int_eq(r.mode, KILN_CACHE_READONLY);
  ck_assert_uint_eq(r.hits, 2);
  snapshot(cache, after, sizeof after);
  ck_assert_str_eq(before, after);

  /* Off: everything compiles from source, same results, nothing touched. */
  run_child_ops(&r, "ops", "KILN_CACHE=off");
  RUN_OK(r);
  ck_assert_int_eq(r.mode, KILN_CACHE_OFF);
  ck_assert_uint_eq(r.hits + r.misses, 0);
  ck_assert_uint_eq(r.uncached, 2);
  ck_assert(r.digest == r1.digest);
  snapshot(cache, after, sizeof after);
  ck_assert_str_eq(before, after);

  /* An untrusted device identity and -I options bypass the cache (the child checks details). */
  char *fresh = harness_tempdir();
  e2e_cache = fresh;
  run_child_ops(&r, "bypass", NULL);
  RUN_OK(r);
  walk_dir(fresh);
  ck_assert_uint_eq(walk_n + walk_temps, 0);

  run_child_ops(&r, "options", "KILN_CACHE_MAX_SIZE=256M");
  RUN_OK(r);
  run_child_ops(&r, "big-cap", "KILN_CACHE_MAX_SIZE=8388608T");
  RUN_OK(r);

  /* Warm-up stores whatever the policy, with the ops' own options: a new process hits it. */
  run_child_ops(&r, "warm", NULL);
  RUN_OK(r);
  /* One entry for the variant, or with one-kernel programs (PoCL) one per kernel of it. */
  if (r.pocl)
    ck_assert_uint_ge(r.stores, 1);
  else
    ck_assert_uint_eq(r.stores, 1);
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.hits, 1); /* cast for f32, the variant warmed above */
  ck_assert_uint_eq(r.misses, 1);
  ck_assert(r.digest == r1.digest);

  /*
   * Two processes build and store the same programs at once (the driver's
   * own cache off, so each really compiles and publishes): all correct, the
   * cache verifies clean, and a third process hits both entries. Two make
   * the race (four took 3 s more of compiles); the file layer's tests race eight.
   */
  char *race_dir = harness_tempdir();
  char env_dir[4200];
  snprintf(env_dir, sizeof env_dir, "KILN_CACHE_DIR=%s", race_dir);
  enum { RACERS = 2 };
  pid_t pids[RACERS];
  char outs[RACERS][4300], pocl_dirs[RACERS][4300];
  for (int i = 0; i < RACERS; i++) {
    /* PoCL's own work directory per racer: concurrent builds of one program in a shared one
     * race inside PoCL (temporary files of the same name), which is not what this checks. */
    snprintf(pocl_dirs[i], sizeof pocl_dirs[i], "POCL_CACHE_DIR=%s/pocl%d", race_dir, i);
    const char *env[] = {env_dir, "KILN_CACHE_STORE=always", "POCL_KERNEL_CACHE=0", pocl_dirs[i],
                         NULL};
    snprintf(outs[i], sizeof outs[i], "%s/out%d", race_dir, i);
    pids[i] = start_child_ops(outs[i], env);
  }
  for (int i = 0; i < RACERS; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    char text[4096] = "";
    FILE *f = fopen(outs[i], "r");
    if (f) {
      text[fread(text, 1, sizeof text - 1, f)] = 0;
      fclose(f);
    }
    unsigned long long digest = 0;
    const char *d = strstr(text, "digest=");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && d, "racer %d (%s %d): %s", i,
                  WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                  text);
    sscanf(d, "digest=%llx", &digest);
    ck_assert(digest == r1.digest);
  }
  kiln_cache *h;
  KOK(kiln_cache_open(race_dir, KILN_CACHE_ON, &h));
  kiln_cache_verify_result vr;
  KOK(kiln_cache_verify(h, 0, &vr));
  ck_assert_uint_eq(vr.checked, 2);
  ck_assert_uint_eq(vr.bad, 0);
  kiln_cache_close(h);
  e2e_cache = race_dir;
  run_child_ops(&r, "ops", NULL);
  RUN_OK(r);
  ck_assert_uint_eq(r.hits, 2);
  harness_rmtree(race_dir);
  free(race_dir);
  harness_rmtree(fresh);
  free(fresh);
  harness_rmtree(cache);
  harness_rmtree(pocl);
  free(cache);
  free(pocl);
}
END_TEST

/* ------------------------------------------------------------ children */

static int
child_default_dir(void)
{
  char buf[4096];
  if (kiln_cache_default_dir(buf, sizeof buf) != KILN_OK)
    return 2;
  printf("dir=%s setuid=%d\n", buf, getuid() != geteuid());
  return 0;
}

static unsigned long long
fnv(const void *p, size_t n, unsigned long long h)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static int report(kiln_context *ctx, unsigned long long digest);

/*
 * Casts f32 -> i32 and i32 -> f32 (two programs: cast for T=float and for
 * T=int), twice each, checks against the host and reports the counters.
 * Casts keep the suite fast: asking PoCL for the binary of the 100+-kernel
 * elementwise program takes seconds, of the 6-kernel cast program a tenth.
 */
static int
child_ops(void)
{
  size_t ndev = 0;
  if (kiln_device_list(NULL, 0, &ndev, NULL) != KILN_OK || ndev == 0)
    return 77;
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK) {
    printf("context: %s\n", kiln_last_error());
    return 2;
  }
  enum { N = 1000 };
  float x[N], back[N];
  int32_t xi[N], yi[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i - 500) / 7.0f;
    xi[i] = (i - 500) * 3;
  }
  int64_t shape[1] = {N};
  unsigned long long digest = 1469598103934665603ull;
  int bad = 0;
  for (int round = 0; round < 2; round++) {
    kiln_tensor *t = NULL, *c = NULL, *ti = NULL, *f = NULL;
    if (kiln_tensor_from_host(ctx, KILN_F32, 1, shape, x, &t) != KILN_OK ||
        kiln_tensor_from_host(ctx, KILN_I32, 1, shape, xi, &ti) != KILN_OK ||
        kiln_cast(ctx, t, KILN_I32, &c) != KILN_OK || kiln_cast(ctx, ti, KILN_F32, &f) != KILN_OK ||
        kiln_tensor_download(c, yi, sizeof yi) != KILN_OK ||
        kiln_tensor_download(f, back, sizeof back) != KILN_OK) {
      printf("op failed: %s\n", kiln_last_error());
      return 3;
    }
    for (int i = 0; i < N; i++)
      bad += yi[i] != (int32_t)x[i] || back[i] != (float)xi[i];
    digest = fnv(back, sizeof back, fnv(yi, sizeof yi, digest));
    kiln_tensor_release(t);
    kiln_tensor_release(c);
    kiln_tensor_release(ti);
    kiln_tensor_release(f);
  }
  report(ctx, digest);
  kiln_context_release(ctx);
  return bad ? 4 : 0;
}

static int
report(kiln_context *ctx, unsigned long long digest)
{
  kiln_cache_stats s;
  kiln_context_cache_stats(ctx, &s);
  kiln_device_info info;
  kiln_context_device_info(ctx, &info);
  int pocl = strstr(info.platform_name, "Portable Computing Language") != NULL;
  printf("RESULT hits=%llu misses=%llu stores=%llu corrupt=%llu rejected=%llu uncached=%llu "
         "mode=%d pocl=%d digest=%llx\nreason=%s\n",
         (unsigned long long)s.session.hits, (unsigned long long)s.session.misses,
         (unsigned long long)s.session.stores, (unsigned long long)s.session.corrupt,
         (unsigned long long)s.session.rejected, (unsigned long long)s.session.uncached,
         (int)s.mode, pocl, digest, s.reason);
  return 0;
}

/* Builds bypassing the cache: an empty driver version (P2) and -I in the options (P13). */
static int
child_bypass(void)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 2;
  kiln_cache_stats s;
  kiln_context_cache_stats(ctx, &s);
  if (s.mode != KILN_CACHE_ON)
    return 3;
  const struct kiln__cl_source *src = kiln__cl_source_find("cast");
  char opts[256];
  kiln__program_options(&ctx->info, "cast", KILN_F32, NULL, opts, sizeof opts);
  strcat(opts, " -I/tmp");
  cl_program prog = NULL;
  struct kiln__build_outcome oc;
  kiln__ctx_lock(ctx);
  kiln_status st = kiln__program_build_locked("test", ctx, src, opts, 0, &prog, &oc);
  kiln__ctx_unlock(ctx);
  if (st != KILN_OK || !oc.compiled || oc.from_cache || oc.stored)
    return 4;
  clReleaseProgram(prog);
  kiln_context_cache_stats(ctx, &s);
  if (s.session.uncached != 1 || s.session.misses != 0)
    return 5;

  ctx->info.driver_version[0] = 0;
  kiln_context_cache_stats(ctx, &s);
  if (s.mode != KILN_CACHE_OFF || !strstr(s.reason, "driver version"))
    return 6;
  kiln_tensor *t = NULL, *c = NULL;
  int64_t shape[1] = {4};
  float x[4] = {1.5f, -2.5f, 3, 4};
  int32_t y[4];
  if (kiln_tensor_from_host(ctx, KILN_F32, 1, shape, x, &t) != KILN_OK ||
      kiln_cast(ctx, t, KILN_I32, &c) != KILN_OK || kiln_tensor_download(c, y, sizeof y) != KILN_OK)
    return 7;
  if (y[0] != 1 || y[1] != -2 || y[3] != 4)
    return 8;
  kiln_context_cache_stats(ctx, &s);
  if (s.session.uncached != 2 || s.session.misses != 0 || s.session.stores != 0)
    return 9;
  kiln_tensor_release(t);
  kiln_tensor_release(c);
  report(ctx, 0);
  kiln_context_release(ctx);
  return 0;
}

/*
 * KILN_CACHE_MAX_SIZE=2^63 (8388608T): a warning and the default, so the
 * option never reads back negative; the option's own range tops out at INT64_MAX.
 */
static int
child_big_cap(void)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 2;
  int64_t v;
  if (kiln_context_get_option(ctx, KILN_OPT_CACHE_MAX_BYTES, &v) != KILN_OK || v != (1 << 30))
    return 3;
  if (kiln__dc_warnings() == 0)
    return 4;
  if (kiln_context_set_option(ctx, KILN_OPT_CACHE_MAX_BYTES, INT64_MAX) != KILN_OK ||
      kiln_context_get_option(ctx, KILN_OPT_CACHE_MAX_BYTES, &v) != KILN_OK || v != INT64_MAX)
    return 5;
  if (kiln_context_set_option(ctx, KILN_OPT_CACHE_MAX_BYTES, INT64_MIN) !=
          KILN_ERR_INVALID_ARGUMENT ||
      kiln_context_get_option(ctx, KILN_OPT_CACHE_MAX_BYTES, &v) != KILN_OK || v != INT64_MAX)
    return 6;
  report(ctx, 0);
  kiln_context_release(ctx);
  return 0;
}

/* The context's cache options, their bounds and the directory override. */
static int
child_options(void)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 2;
  int64_t v, lo, hi;
  if (kiln_context_get_option(ctx, KILN_OPT_CACHE_MODE, &v) != KILN_OK || v != KILN_CACHE_ON)
    return 3;
  if (kiln_context_get_option(ctx, KILN_OPT_CACHE_MAX_BYTES, &v) != KILN_OK || v != (256 << 20))
    return 4; /* from KILN_CACHE_MAX_SIZE=256M in the environment */
  if (kiln_context_get_option(ctx, KILN_OPT_CACHE_STORE, &v) != KILN_OK ||
      v != KILN_CACHE_STORE_AUTO)
    return 5;
  if (kiln_option_bounds(KILN_OPT_CACHE_MODE, &lo, &hi) != KILN_OK || lo != 0 || hi != 2 ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_MODE, 3) != KILN_ERR_INVALID_ARGUMENT ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_STORE, 2) != KILN_ERR_INVALID_ARGUMENT ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_MAX_BYTES, -1) != KILN_ERR_INVALID_ARGUMENT)
    return 6;
  if (kiln_context_set_option(ctx, KILN_OPT_CACHE_MODE, KILN_CACHE_READONLY) != KILN_OK ||
      kiln_context_get_option(ctx, KILN_OPT_CACHE_MODE, &v) != KILN_OK || v != KILN_CACHE_READONLY)
    return 7;
  if (kiln_context_set_option(ctx, KILN_OPT_CACHE_MAX_BYTES, 12345) != KILN_OK ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_STORE, KILN_CACHE_STORE_ALWAYS) != KILN_OK ||
      kiln_context_set_option(ctx, KILN_OPT_CACHE_MODE, KILN_CACHE_ON) != KILN_OK)
    return 8;
  kiln_cache_stats s;
  kiln_context_cache_stats(ctx, &s);
  if (s.max_bytes != 12345 || s.mode != KILN_CACHE_ON ||
      kiln_context_get_option(ctx, KILN_OPT_CACHE_STORE, &v) != KILN_OK ||
      v != KILN_CACHE_STORE_ALWAYS)
    return 9; /* a reopen keeps the cap and the policy */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/elsewhere", getenv("KILN_CACHE_DIR"));
  if (kiln_context_set_cache_dir(ctx, dir) != KILN_OK)
    return 10;
  kiln_context_cache_stats(ctx, &s);
  if (strcmp(s.dir, dir) != 0 || s.mode != KILN_CACHE_ON || access(dir, F_OK) != 0)
    return 11;
  /* An unusable directory is not an error: the cache just goes off, and says why. */
  if (kiln_context_set_cache_dir(ctx, "/proc/version/kiln") != KILN_OK)
    return 12;
  kiln_context_cache_stats(ctx, &s);
  if (s.mode != KILN_CACHE_OFF || !s.reason[0] ||
      kiln_context_set_cache_dir(ctx, NULL) != KILN_OK)
    return 13;
  kiln_context_cache_stats(ctx, &s);
  if (strcmp(s.dir, getenv("KILN_CACHE_DIR")) != 0 || s.mode != KILN_CACHE_ON)
    return 14;
  kiln_context_release(ctx);
  printf("RESULT hits=0 misses=0 stores=0 corrupt=0 rejected=0 uncached=0 mode=2 pocl=0 "
         "digest=0\n");
  return 0;
}

static int
warm_stop_after_one(size_t done, size_t total, const char *source, const char *options,
                    kiln_status status, void *user)
{
  (void)total;
  (void)options;
  *(int *)user = status == KILN_OK && strcmp(source, "cast") == 0 && done == 1;
  return 1;
}

/* Warms the first variant only (cast for f32: sources are sorted, f32 is the first dtype). */
static int
child_warm(void)
{
  kiln_context *ctx;
  if (kiln_context_create(NULL, &ctx) != KILN_OK)
    return 2;
  int first_ok = 0;
  kiln_cache_warm_result w;
  if (kiln_context_cache_warm(ctx, warm_stop_after_one, &first_ok, &w) != KILN_OK || !first_ok)
    return 3;
  /* Every source times the dtypes its family builds for it (struct kiln__source) and the
   * device runs. */
  size_t variants = 0;
  for (size_t i = 0; i < KILN__CL_SOURCE_COUNT; i++) {
    const struct kiln__source *row = NULL;
    if (!kiln__family_of_source(kiln__cl_sources[i].name, &row) || !row)
      continue;
    for (int d = 0; d < KILN_DTYPE_COUNT; d++)
      variants += (row->dtypes >> d & 1u) && kiln__device_has_dtype(&ctx->info, (kiln_dtype)d);
  }
  if (w.done != 1 || w.built != 1 || w.stored != 1 || w.variants != variants)
    return 4;
  report(ctx, 0);
  kiln_context_release(ctx);
  return 0;
}

static int
child_main(int argc, char **argv)
{
  if (argc < 3)
    return 2;
  if (strcmp(argv[2], "default-dir") == 0)
    return child_default_dir();
  if (strcmp(argv[2], "ops") == 0)
    return child_ops();
  if (strcmp(argv[2], "bypass") == 0)
    return child_bypass();
  if (strcmp(argv[2], "warm") == 0)
    return child_warm();
  if (strcmp(argv[2], "options") == 0)
    return child_options();
  if (strcmp(argv[2], "big-cap") == 0)
    return child_big_cap();
  return 2;
}

/* ------------------------------------------------------------ suite */

static Suite *
cache_suite(void)
{
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("file layer");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, format_golden_bytes);
  tcase_add_test(tc, key_covers_every_input);
  tcase_add_test(tc, uncacheable_options_and_untrusted_identity);
  tcase_add_test(tc, identity_mismatch_is_a_miss);
  tcase_add_test(tc, corrupt_entries_miss_then_heal);
  tcase_add_test(tc, forged_entry_is_refused_and_rebuilt);
  tcase_add_test(tc, mac_key_file_is_private_and_agreed_on);
  tcase_add_test(tc, untrusted_entry_subdirectory_is_not_served);
  tcase_add_test(tc, unreadable_entry_miss_then_heal);
  tcase_add_test(tc, killed_writer_leaves_no_partial_entry);
  tcase_add_test(tc, writer_killed_at_random_points);
  tcase_add_test(tc, concurrent_first_open);
  tcase_add_test(tc, eight_processes_race_on_shared_keys);
  tcase_add_test(tc, eight_processes_race_with_eviction);
  tcase_add_test(tc, size_cap_and_lru_order);
  tcase_add_test(tc, recount_after_files_vanish);
  tcase_add_test(tc, readonly_mode_serves_hits_and_writes_nothing);
  tcase_add_test(tc, unwritable_directory_degrades_to_readonly);
  tcase_add_test(tc, uncreatable_directory_runs_uncached);
  tcase_add_test(tc, bad_paths_and_disabled_mode);
  tcase_add_test(tc, size_strings);
  tcase_add_test(tc, disk_full_keeps_good_entries);
  tcase_add_test(tc, directory_resolution_order);
  tcase_add_test(tc, setuid_ignores_environment);
  tcase_add_test(tc, untrusted_directories_are_refused);
  tcase_add_test(tc, format_bump_invalidates_cleanly);
  tcase_add_test(tc, stats_are_exact_and_resettable);
  tcase_add_test(tc, no_descriptors_held);
  tcase_add_test(tc, inspection_api);
  suite_add_tcase(s, tc);
  TCase *e2e = tcase_create("end to end");
  tcase_set_timeout(e2e, 240);
  tcase_add_test(e2e, e2e_cross_process);
  suite_add_tcase(s, e2e);
  return s;
}

int
main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--child") == 0)
    return child_main(argc, argv);
  return harness_main(cache_suite(), 0);
}
