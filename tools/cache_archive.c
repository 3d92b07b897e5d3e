/*
 * kiln cache export / import: a single archive of complete entry files, so an
 * application can ship a warm cache. docs/cli.md documents the format:
 *
 *   header   "KILNCARC", u32 archive version (1), u32 flags (0), i64 created
 *   records  u64 length L, u32 CRC-32 of the L bytes, u32 reserved (0),
 *            L bytes: one entry file exactly as kiln_cache_entry_read returns it
 *   trailer  "KILNCEND", u64 record count, u32 CRC-32 of every byte before this field
 *
 * All integers little-endian; CRC-32 is the IEEE/zlib one. The file must end
 * right after the trailer.
 *
 * The reader is tools/cache_archive_read.c (fuzzed on its own in tests/fuzz).
 *
 * Export writes a temporary file next to FILE and renames it into place.
 * Import checks the whole archive before it publishes anything: every record
 * is checked against its CRC and written into a private staging cache with
 * kiln_cache_entry_write_keyed (which checks format and key, and the MAC
 * under the target directory's key or the --key file's), and the trailer
 * must match. Only then are the entries that match a present device (or
 * all, with --all) copied into the target cache, each published atomically
 * by the library with a MAC under the target's key. A corrupt or truncated
 * archive, or one with any entry whose MAC does not verify, imports nothing:
 * the CRCs catch damage, only the MACs catch forgery.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/cache_archive_read.h"
#include "tools/cache_cli.h"
#include "tools/commands.h"
#include "tools/units.h"

static void
put_u32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* ================================================================ export */

static const char export_usage[] =
    "usage: kiln cache export FILE [--dir DIR] [--json] [--device SUBSTR]\n\n"
    "Writes the cache's sound entries (optionally only those of one device) into one archive\n"
    "file, to ship a warm cache; 'kiln cache import' reads it. FILE is replaced atomically.\n"
    "Corrupt entries are left out and reported (exit status 1); so is an export that would\n"
    "be empty.\n\n"
    "options:\n"
    "  --dir DIR         the cache directory (default: the one the library uses)\n"
    "  --json            one JSON document on stdout\n"
    "  --device SUBSTR   only entries whose device name contains SUBSTR (any case)\n";

struct writer {
  FILE *f;
  uint32_t crc;
  uint64_t bytes;
};

static int
wr(struct writer *w, const void *p, size_t n)
{
  w->crc = archive_crc32(w->crc, p, n);
  w->bytes += n;
  return fwrite(p, 1, n, w->f) == n ? 0 : -1;
}

int
cache_export(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "export", export_usage);
  if (tool_wants_help(argc, argv, export_usage))
    return EXIT_OK;
  const char *file = NULL, *device = NULL, *v;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--device", &v)) == 1)
      device = v;
    if (r < 0)
      return EXIT_USAGE;
    if (r)
      continue;
    if (argv[i][0] == '-' || file)
      return cli_unexpected(&c, argv[i]);
    file = argv[i];
  }
  if (!file || !*file)
    return cli_usage_error(&c, "which file? give the archive to write");
  /* The archive replaces FILE by a rename: a device, FIFO or directory there (/dev/stdout,
   * /dev/full) would be replaced by a regular file, or could not be, so it is refused, as
   * import refuses one. A symbolic link to a regular file keeps the link: the archive
   * replaces the file it names. */
  static char target[PATH_MAX];
  struct stat st;
  if (stat(file, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return cli_fail(&c, "%s is not a regular file: the archive is written to a temporary file "
                          "next to it and renamed into place",
                      file);
    struct stat lst;
    if (lstat(file, &lst) == 0 && S_ISLNK(lst.st_mode)) {
      if (!realpath(file, target))
        return cli_fail(&c, "cannot resolve the symbolic link %s: %s", file, strerror(errno));
      file = target;
    }
  }
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  if (!c.exists)
    return cli_fail(&c, "nothing to export: %s does not exist", c.dir);
  kiln_cache *cache;
  if ((rc = cli_open(&c, KILN_CACHE_READONLY, &cache)))
    return rc;
  struct entry_list l = {0};
  if ((rc = cli_collect(&c, cache, 0, &l))) {
    kiln_cache_close(cache);
    return rc;
  }
  /* The temporary file lives next to FILE, so the rename cannot cross file systems. */
  size_t flen = strlen(file);
  char *tmp = malloc(flen + 16);
  int fd = -1;
  if (tmp) {
    snprintf(tmp, flen + 16, "%s.tmp.XXXXXX", file);
    fd = mkstemp(tmp);
  }
  if (fd < 0) {
    rc = tmp ? cli_fail(&c, "cannot create a file next to %s: %s", file, strerror(errno))
             : cli_fail(&c, "out of memory");
    free(tmp);
    entry_list_free(&l);
    kiln_cache_close(cache);
    return rc;
  }
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  struct writer w = {fdopen(fd, "wb"), 0, 0};
  uint8_t hdr[ARCHIVE_HEADER];
  memcpy(hdr, ARCHIVE_MAGIC, 8);
  put_u32(hdr + 8, ARCHIVE_VERSION);
  put_u32(hdr + 12, 0);
  put_u64(hdr + 16, (uint64_t)time(NULL));
  int werr = !w.f || wr(&w, hdr, sizeof hdr) != 0;
  uint64_t count = 0, entry_bytes = 0, corrupt = 0, skipped_device = 0;
  char **keys = calloc(l.n + 1, sizeof *keys);
  for (size_t i = 0; i < l.n && !werr && keys; i++) {
    const kiln_cache_entry *e = &l.v[i];
    if (e->state == KILN_CACHE_ENTRY_OK && device && !contains_nocase(e->device_name, device)) {
      skipped_device++;
      continue;
    }
    void *data = NULL;
    size_t size = 0;
    kiln_status s = e->state == KILN_CACHE_ENTRY_OK
                        ? kiln_cache_entry_read(cache, e->key, &data, &size)
                        : KILN_ERR_INVALID_ARGUMENT;
    if (s == KILN_ERR_NOT_FOUND)
      continue; /* removed by another process since the listing */
    if (s != KILN_OK) {
      if (s == KILN_ERR_INVALID_ARGUMENT || s == KILN_ERR_IO) {
        fprintf(stderr, "kiln cache export: left out %s: %s\n", e->key,
                e->state == KILN_CACHE_ENTRY_OK ? kiln_last_error() : e->problem);
        corrupt++;
        continue;
      }
      rc = cli_fail_kiln(&c);
      break;
    }
    uint8_t rec[16];
    put_u64(rec, size);
    put_u32(rec + 8, archive_crc32(0, data, size));
    put_u32(rec + 12, 0);
    werr = wr(&w, rec, sizeof rec) != 0 || wr(&w, data, size) != 0;
    free(data);
    if (!werr) {
      keys[count++] = (char *)e->key;
      entry_bytes += size;
    }
  }
  kiln_cache_close(cache);
  if (!keys && !rc)
    rc = cli_fail(&c, "out of memory");
  if (!rc && !werr) {
    uint8_t end[20];
    memcpy(end, ARCHIVE_END, 8);
    put_u64(end + 8, count);
    w.crc = archive_crc32(w.crc, end, 16);
    put_u32(end + 16, w.crc);
    werr = fwrite(end, 1, sizeof end, w.f) != sizeof end;
    w.bytes += sizeof end;
  }
  if (!rc && !werr)
    werr = fflush(w.f) != 0 || fsync(fileno(w.f)) != 0;
  int cerr = w.f ? fclose(w.f) : close(fd);
  if (!rc && (werr || cerr))
    rc = cli_fail(&c, "cannot write %s: %s", tmp, strerror(errno));
  if (!rc && count == 0)
    rc = cli_fail(&c, "no entries to export%s%s%s", device ? " for device '" : "",
                  device ? device : "", device ? "'" : "");
  if (!rc && rename(tmp, file) != 0)
    rc = cli_fail(&c, "cannot rename %s to %s: %s", tmp, file, strerror(errno));
  if (rc) {
    unlink(tmp);
  } else if (c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_string(&j, "file", file);
    json_u64(&j, "entries", count);
    json_u64(&j, "entry_bytes", entry_bytes);
    json_u64(&j, "archive_bytes", w.bytes);
    json_u64(&j, "left_out_corrupt", corrupt);
    json_u64(&j, "skipped_other_devices", skipped_device);
    json_array_begin(&j, "keys");
    for (uint64_t i = 0; i < count; i++)
      json_string(&j, NULL, keys[i]);
    json_array_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else {
    char a[32];
    printf("exported %llu entr%s (%s) from %s to %s", (unsigned long long)count,
           count == 1 ? "y" : "ies", units_size(entry_bytes, a, sizeof a), c.dir, file);
    if (skipped_device)
      printf("; %llu of other devices not included", (unsigned long long)skipped_device);
    printf("\n");
  }
  if (!rc && corrupt)
    rc = EXIT_PROBLEM; /* the archive is written; the left-out entries are reported above */
  free(keys);
  free(tmp);
  entry_list_free(&l);
  return rc;
}

/* ================================================================ import */

static const char import_usage[] =
    "usage: kiln cache import FILE [--dir DIR] [--json] [--all] [--key KEYFILE]\n\n"
    "Adds the entries of an archive written by 'kiln cache export'. The whole archive is\n"
    "checked first (record checksums, every entry's header, key and MAC, the trailer):\n"
    "a corrupt or truncated archive, or one with an entry whose MAC does not verify,\n"
    "imports nothing (exit status 1). A MAC verifies under the target directory's own key\n"
    "(archives this cache exported) or under KEYFILE. Then the entries built for a device\n"
    "present on this machine (same platform, device, driver, vendor and address bits) are\n"
    "published, each atomically with a MAC under the target's key; the others are skipped.\n"
    "Entries are staged in a private directory under $TMPDIR (default /tmp) while checking.\n\n"
    "options:\n"
    "  --dir DIR       the cache directory (default: the one the library uses; created if needed)\n"
    "  --json          one JSON document on stdout\n"
    "  --all           import every entry, also those of devices not present (no OpenCL needed)\n"
    "  --key KEYFILE   also accept entries authenticated by this key file: the exporting\n"
    "                  cache's key ('kiln cache stats' shows its path), copied over a channel\n"
    "                  you trust. Whoever has it can make entries your cache will run.\n";

/* Removes the staging cache: kiln's files through the library, then the emptied directories. */
static void
remove_staging(kiln_cache *staging, const char *dir)
{
  if (staging) {
    kiln_cache_clear(staging, NULL);
    char key[4200];
    if (kiln_cache_key_path(staging, key, sizeof key) == KILN_OK)
      unlink(key); /* the clear keeps a directory's key */
    kiln_cache_close(staging);
  }
  /* kiln_cache_clear keeps the current format's directory; rmdir takes only empty ones. */
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] == 'v' && de->d_name[1] >= '0' && de->d_name[1] <= '9') {
      char sub[4400];
      snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
      rmdir(sub);
    }
  if (d)
    closedir(d);
  if (rmdir(dir) != 0 && errno != ENOENT)
    fprintf(stderr, "kiln cache import: could not remove the staging directory %s: %s\n", dir,
            strerror(errno));
}

/* The MAC keys an archive's entries may be authenticated with. */
struct import_keys {
  uint8_t local[KILN_CACHE_KEY_BYTES]; /* the target directory's */
  uint8_t given[KILN_CACHE_KEY_BYTES]; /* --key */
  int have_given;
};

/* The key of an open cache. EXIT_OK or EXIT_PROBLEM (message printed). */
static int
cache_key(const struct cache_cli *c, kiln_cache *cache, uint8_t key[KILN_CACHE_KEY_BYTES])
{
  char path[4200];
  if (kiln_cache_key_path(cache, path, sizeof path) != KILN_OK ||
      kiln_cache_key_read(path, key) != KILN_OK)
    return cli_fail_kiln(c);
  return EXIT_OK;
}

/*
 * Stages one record: its MAC must verify under the target's key or the
 * --key one. 0, or -1 with kiln_last_error() saying why.
 */
static int
stage_record(kiln_cache *staging, const struct import_keys *k, const uint8_t *data, size_t len)
{
  if (kiln_cache_entry_write_keyed(staging, data, len, k->local, NULL) == KILN_OK)
    return 0;
  if (k->have_given && kiln_cache_entry_write_keyed(staging, data, len, k->given, NULL) == KILN_OK)
    return 0;
  return -1;
}

/*
 * Opens an archive the user named: never blocks (a FIFO would hang a
 * plain open or read) and takes only regular files. NULL with the message printed.
 */
static FILE *
open_archive(const struct cache_cli *c, const char *file, struct stat *st)
{
  int fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    cli_fail(c, "cannot open %s: %s", file, strerror(errno));
    return NULL;
  }
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    cli_fail(c, "%s is not a regular file", file);
    close(fd);
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    cli_fail(c, "cannot read %s: %s", file, strerror(errno));
    close(fd);
  }
  return f;
}

struct stage_arg {
  const char *file;
  kiln_cache *staging;
  const struct import_keys *keys;
  uint64_t refused;
};

/* Refused entries are counted and the rest still checked, so one run reports them all. */
static int
stage_one(const uint8_t *data, size_t len, uint64_t index, void *user)
{
  struct stage_arg *a = user;
  if (stage_record(a->staging, a->keys, data, len) == 0)
    return 0;
  char key[33] = "?";
  if (len >= 64)
    for (int i = 0; i < 16; i++)
      snprintf(key + 2 * i, 3, "%02x", data[48 + i]);
  fprintf(stderr, "kiln cache import: %s: record %llu (entry %s) refused: %s\n", a->file,
          (unsigned long long)index + 1, key, kiln_last_error());
  a->refused++;
  return 0;
}

/* Checks the archive and stages its entries. EXIT_OK, or EXIT_PROBLEM with the cause printed. */
static int
stage_archive(const struct cache_cli *c, const char *file, kiln_cache *staging,
              const struct import_keys *keys, uint64_t *records, uint64_t *refused)
{
  struct stat st;
  FILE *f = open_archive(c, file, &st);
  if (!f)
    return EXIT_PROBLEM;
  struct stage_arg a = {file, staging, keys, 0};
  char err[512];
  int r = archive_read(f, (uint64_t)st.st_size, stage_one, &a, records, err, sizeof err);
  fclose(f);
  *refused = a.refused;
  if (r != 0)
    return cli_fail(c, "%s%s", file, err);
  if (a.refused)
    return cli_fail(c,
                    "%s: %llu of %llu entries refused: not authenticated by this cache's key%s "
                    "(an archive from another cache directory needs its key: --key FILE)",
                    file, (unsigned long long)a.refused, (unsigned long long)*records,
                    keys->have_given ? " or the --key file's" : "");
  return EXIT_OK;
}

int
cache_import(int argc, char **argv)
{
  struct cache_cli c;
  cli_init(&c, "import", import_usage);
  if (tool_wants_help(argc, argv, import_usage))
    return EXIT_OK;
  const char *file = NULL, *key_file = NULL, *v;
  int all = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_opt(&c, argc, argv, &i);
    if (r == 0 && (r = cli_opt_value(&c, argc, argv, &i, "--key", &v)) == 1)
      key_file = v;
    if (r < 0)
      return EXIT_USAGE;
    if (r)
      continue;
    if (strcmp(argv[i], "--all") == 0)
      all = 1;
    else if (argv[i][0] == '-' || file)
      return cli_unexpected(&c, argv[i]);
    else
      file = argv[i];
  }
  if (!file || !*file)
    return cli_usage_error(&c, "which file? give the archive to read");
  if (key_file && !*key_file)
    return cli_usage_error(&c, "--key needs a key file");
  int rc = cli_resolve_dir(&c);
  if (rc)
    return rc;
  struct import_keys keys = {.have_given = key_file != NULL};
  if (key_file && kiln_cache_key_read(key_file, keys.given) != KILN_OK)
    return cli_fail_kiln(&c);
  /* Open the target first: an unusable directory should fail before the work. */
  kiln_cache *target;
  if ((rc = cli_open(&c, KILN_CACHE_ON, &target)))
    return rc;
  if ((rc = cache_key(&c, target, keys.local))) {
    kiln_cache_close(target);
    return rc;
  }
  kiln_device_info *devs = NULL;
  size_t ndev = 0;
  if (!all && (rc = cli_devices(&c, &devs, &ndev))) {
    kiln_cache_close(target);
    return rc;
  }
  const char *tmpdir = getenv("TMPDIR");
  char sdir[4096];
  snprintf(sdir, sizeof sdir, "%s/kiln-import-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  kiln_cache *staging = NULL;
  if (!mkdtemp(sdir)) {
    rc = cli_fail(&c, "cannot create a staging directory %s: %s", sdir, strerror(errno));
    free(devs);
    kiln_cache_close(target);
    return rc;
  }
  if (kiln_cache_open(sdir, KILN_CACHE_ON, &staging) != KILN_OK) {
    rc = cli_fail_kiln(&c);
  } else {
    kiln_cache_set_max_bytes(staging, 0); /* never evict while staging */
  }
  uint64_t records = 0, refused = 0;
  uint8_t staging_key[KILN_CACHE_KEY_BYTES];
  if (!rc)
    rc = cache_key(&c, staging, staging_key);
  if (!rc && (rc = stage_archive(&c, file, staging, &keys, &records, &refused)))
    fprintf(stderr, "kiln cache import: nothing was imported into %s\n", c.dir);
  struct entry_list l = {0};
  if (!rc)
    rc = cli_collect(&c, staging, 0, &l);
  uint64_t imported = 0, bytes = 0;
  size_t *skipped = calloc(l.n + 1, sizeof *skipped);
  size_t nskipped = 0;
  if (!rc && !skipped)
    rc = cli_fail(&c, "out of memory");
  for (size_t i = 0; i < l.n && !rc; i++) {
    const kiln_cache_entry *e = &l.v[i];
    if (!all && entry_device_match(e, devs, ndev) < 0) {
      skipped[nskipped++] = i;
      continue;
    }
    void *data = NULL;
    size_t size = 0;
    if (kiln_cache_entry_read(staging, e->key, &data, &size) != KILN_OK ||
        kiln_cache_entry_write_keyed(target, data, size, staging_key, NULL) != KILN_OK) {
      rc = cli_fail(&c, "entry %s: %s (%llu entries imported before it)", e->key, kiln_last_error(),
                    (unsigned long long)imported);
    } else {
      imported++;
      bytes += size;
    }
    free(data);
  }
  remove_staging(staging, sdir);
  kiln_cache_close(target);
  if (!rc && c.json) {
    struct json j;
    json_init(&j, stdout);
    json_object_begin(&j, NULL);
    json_string(&j, "dir", c.dir);
    json_string(&j, "file", file);
    json_u64(&j, "records", records);
    json_u64(&j, "entries", l.n);
    json_u64(&j, "imported", imported);
    json_u64(&j, "bytes", bytes);
    json_u64(&j, "skipped", nskipped);
    json_array_begin(&j, "skipped_entries");
    for (size_t i = 0; i < nskipped; i++) {
      const kiln_cache_entry *e = &l.v[skipped[i]];
      json_object_begin(&j, NULL);
      json_string(&j, "key", e->key);
      json_string(&j, "source", e->source_name);
      json_string(&j, "device", e->device_name);
      json_string(&j, "driver", e->driver_version);
      json_object_end(&j);
    }
    json_array_end(&j);
    json_object_end(&j);
    if (json_end(&j) != 0)
      rc = cli_fail(&c, "cannot write the JSON output");
  } else if (!rc) {
    char a[32];
    printf("imported %llu of %zu entr%s (%s) from %s into %s\n", (unsigned long long)imported, l.n,
           l.n == 1 ? "y" : "ies", units_size(bytes, a, sizeof a), file, c.dir);
    if (nskipped) {
      printf("skipped %zu built for devices not present here (--all imports them anyway):\n",
             nskipped);
      for (size_t i = 0; i < nskipped && i < 20; i++) {
        const kiln_cache_entry *e = &l.v[skipped[i]];
        printf("  %.12s  ", e->key);
        text_put(stdout, e->source_name);
        fputs("  ", stdout);
        text_put(stdout, e->device_name);
        fputs("  driver ", stdout);
        text_put(stdout, e->driver_version);
        putchar('\n');
      }
      if (nskipped > 20)
        printf("  ... and %zu more\n", nskipped - 20);
    }
  }
  free(skipped);
  free(devs);
  entry_list_free(&l);
  return rc;
}
