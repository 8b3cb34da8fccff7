/*
 * cli_write.c - writing an output file for the arenactl subcommands
 * without overwriting what they were not asked to (see cli_write.h for
 * what each kind of path gets).
 *
 * DESIGN
 *  The path is looked at first without following a symbolic link
 *  (lstat): what it names decides between writing in place (a character
 *  device or a FIFO, also through links), replacing (a regular file, or
 *  nothing yet) and refusing (everything else). Replacing works on a
 *  descriptor of the path's directory: the temporary file is created
 *  there with openat(O_CREAT | O_EXCL | O_NOFOLLOW), renamed with
 *  renameat() and removed with unlinkat() on every failure, so that all
 *  three name the same directory even if a component of the path is
 *  swapped meanwhile. The temporary name is random, not derived from
 *  PATH alone: a name planted in advance is skipped (EEXIST), and one
 *  cannot be planted for every try. O_EXCL alone already refuses an
 *  existing link; O_NOFOLLOW says so twice. A rename never follows a
 *  link at its target, so a link that appears at PATH after the lstat is
 *  replaced, not written through.
 */
#include "cli_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Longest part of PATH's last component kept in a temporary name, so
 * that "." NAME "." SUFFIX fits in NAME_MAX (255) bytes. */
#define TMP_BASE_MAX 200u

static int write_all(int fd, const uint8_t *p, size_t n)
{
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -1;
    if (k == 0) {
      errno = EIO;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int write_stdout(const void *data, size_t len)
{
  if (len)
    fwrite(data, 1, len, stdout);
  return cli_finish_stdout();
}

/* ---- in place: devices and FIFOs ------------------------------------------ */

static int is_in_place(mode_t m)
{
  return S_ISCHR(m) || S_ISFIFO(m);
}

/* Opens path (following links) without creating or truncating it, and
 * writes to it only when it is still a character device or a FIFO. A
 * FIFO blocks the open until a reader comes. */
static int write_in_place(const char *path, const void *data, size_t len)
{
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    cli_error(path, "cannot open for writing: %s", strerror(errno));
    return CLI_EX_IOERR;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !is_in_place(st.st_mode)) {
    close(fd);
    cli_error(path, "changed while it was opened; not written");
    return CLI_EX_IOERR;
  }
  int rc = write_all(fd, data, len);
  int e = errno;
  if (close(fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc) {
    cli_error(path, "cannot write: %s", strerror(e));
    return CLI_EX_IOERR;
  }
  return 0;
}

/* ---- replacing: a temporary file, synced and renamed ---------------------- */

static void random_suffix(void *ctx, unsigned attempt,
                          char suffix[CLI_WRITE_SUFFIX_LEN + 1])
{
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                            "0123456789";
  uint8_t r[CLI_WRITE_SUFFIX_LEN];
  (void)ctx;
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    /* No entropy yet (early boot): unpredictable enough, and the
     * exclusive create is what keeps the file safe either way. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 ((uint64_t)getpid() << 40) ^ ((uint64_t)attempt << 32);
    for (size_t i = 0; i < sizeof r; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      r[i] = (uint8_t)(x >> 56);
    }
  }
  for (size_t i = 0; i < CLI_WRITE_SUFFIX_LEN; i++)
    suffix[i] = abc[r[i] % (sizeof abc - 1)];
  suffix[CLI_WRITE_SUFFIX_LEN] = '\0';
}

/* PATH split into its directory (owned) and its last component
 * (borrowed from PATH). */
struct target {
  char *dir;        /* "." when PATH has no slash; owned */
  const char *base; /* the last component, non-empty */
};

static int split_path(const char *path, struct target *t)
{
  const char *slash = strrchr(path, '/');
  t->base = slash ? slash + 1 : path;
  t->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
                 : strdup(".");
  return t->dir ? 0 : -1;
}

/* Creates the temporary file in directory dfd: ".BASE.SUFFIX", trying
 * CLI_WRITE_TRIES suffixes. Returns its descriptor with its name in
 * name, or -1 with errno set. */
static int create_tmp(int dfd, const char *base, mode_t mode,
                      cli_write_suffix_cb suffix, void *ctx,
                      char name[NAME_MAX + 1])
{
  char sfx[CLI_WRITE_SUFFIX_LEN + 1];
  for (unsigned i = 0; i < CLI_WRITE_TRIES; i++) {
    suffix(ctx, i, sfx);
    snprintf(name, NAME_MAX + 1, ".%.*s.%s", (int)TMP_BASE_MAX, base, sfx);
    int fd = openat(dfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
                        O_NOCTTY,
                    mode);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  errno = EEXIST;
  return -1;
}

/* Writes, syncs and renames the temporary file fd (named name in dfd)
 * to base. Returns 0, or -1 with errno set and *step naming what failed;
 * the caller removes the temporary file. Closes fd either way. */
static int fill_and_rename(int fd, int dfd, const char *name,
                           const char *base, const struct stat *old,
                           const void *data, size_t len, const char **step)
{
  int rc = 0;
  *step = "cannot set the mode of";
  if (old && fchmod(fd, old->st_mode & 0777) != 0)
    rc = -1;
  if (rc == 0) {
    *step = "cannot write";
    rc = write_all(fd, data, len);
  }
  if (rc == 0) {
    *step = "cannot sync";
    rc = fsync(fd);
  }
  int e = errno;
  if (close(fd) != 0 && rc == 0) {
    *step = "cannot write";
    return -1;
  }
  errno = e;
  if (rc)
    return -1;
  *step = "cannot rename into place";
  return renameat(dfd, name, dfd, base);
}

/* Replaces path (borrowed) by a new file: old is what stands there now
 * (NULL: nothing). */
static int write_replace(const char *path, const struct stat *old,
                         const void *data, size_t len,
                         cli_write_suffix_cb suffix, void *ctx)
{
  struct target t;
  if (split_path(path, &t) != 0) {
    cli_error(path, "out of memory");
    return CLI_EX_OSERR;
  }
  if (!*t.base || strcmp(t.base, ".") == 0 || strcmp(t.base, "..") == 0) {
    cli_error(path, "names a directory, not a file");
    free(t.dir);
    return CLI_EX_IOERR;
  }
  int dfd = open(t.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    cli_error(path, "cannot open its directory %s: %s", t.dir,
              strerror(errno));
    free(t.dir);
    return CLI_EX_IOERR;
  }
  char name[NAME_MAX + 1];
  int fd = create_tmp(dfd, t.base, old ? (old->st_mode & 0777) : 0666,
                      suffix ? suffix : random_suffix, ctx, name);
  if (fd < 0) {
    cli_error(path, "cannot create a temporary file in %s: %s", t.dir,
              strerror(errno));
    close(dfd);
    free(t.dir);
    return CLI_EX_IOERR;
  }
  const char *step;
  int rc = fill_and_rename(fd, dfd, name, t.base, old, data, len, &step);
  if (rc) {
    int e = errno;
    (void)unlinkat(dfd, name, 0);
    cli_error(path, "%s %s%s%s: %s", step, t.base == path ? "" : t.dir,
              t.base == path ? "" : "/", name, strerror(e));
  } else {
    /* Makes the rename durable. A failure here is benign: the file is
     * whole and in place either way, and some file systems cannot sync
     * a directory. */
    (void)fsync(dfd);
  }
  close(dfd);
  free(t.dir);
  return rc ? CLI_EX_IOERR : 0;
}

/* ---- the entry points ------------------------------------------------------ */

int cli__write_file(const char *path, const void *data, size_t len,
                    cli_write_suffix_cb suffix, void *ctx)
{
  struct stat st, target;
  if (!path || strcmp(path, "-") == 0)
    return write_stdout(data, len);
  if (!*path) {
    cli_error(NULL, "the output path is empty");
    return CLI_EX_IOERR;
  }
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT)
      return write_replace(path, NULL, data, len, suffix, ctx);
    cli_error(path, "cannot write: %s", strerror(errno));
    return CLI_EX_IOERR;
  }
  if (S_ISREG(st.st_mode))
    return write_replace(path, &st, data, len, suffix, ctx);
  if (is_in_place(st.st_mode))
    return write_in_place(path, data, len);
  if (S_ISLNK(st.st_mode)) {
    if (stat(path, &target) == 0 && is_in_place(target.st_mode))
      return write_in_place(path, data, len);
    cli_error(path, "is a symbolic link; not replaced, not followed (give "
                    "the file it names, or - for standard output)");
    return CLI_EX_IOERR;
  }
  cli_error(path, "is %s; only a regular file is replaced (a character "
                  "device or a FIFO is written in place)",
            S_ISDIR(st.st_mode)   ? "a directory"
            : S_ISBLK(st.st_mode) ? "a block device"
            : S_ISSOCK(st.st_mode) ? "a socket"
                                   : "not a regular file");
  return CLI_EX_IOERR;
}

int cli_write_file(const char *path, const void *data, size_t len)
{
  return cli__write_file(path, data, len, NULL, NULL);
}

int cli_write_is_stdout(const char *path)
{
  struct stat a, b;
  if (!path || strcmp(path, "-") == 0)
    return 1;
  return stat(path, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
