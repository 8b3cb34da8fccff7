/*
 * check_models_input.c - the models suite's test case "input": arenactl
 * refuses input exactly as docs/arenactl.md says, at the edges of its
 * limits. A --shape is refused with one status whatever the file (CSV
 * or .tflite); the largest tensor and the last operator plan or are
 * refused as LIMITS says; explain and render chart 10^7 operators, not
 * one more; refusing an input costs memory in proportion to what came
 * before its first error, not to its size (measured as the peak
 * resident memory of the arenactl process, from wait4(), against
 * sources of 256 MiB, with a bound of 64 MiB: a run takes about 3 MB,
 * 14 MB under the sanitizers, with what it inherits from this process
 * at fork; reading a whole source took over 256 MB).
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_models.h"
#include "testutil.h"

/* Writes text into the temp dir as name. */
static void put_file(const char *name, const char *text)
{
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", cm_tmpdir(), name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  ck_assert_int_eq(fclose(f), 0);
}

/* Copies tests/data/<rel> into the temp dir as name. */
static void copy_data(const char *rel, const char *name)
{
  char src[PATH_MAX + 64];
  size_t len;
  snprintf(src, sizeof src, "%s/%s", tu_data_dir(), rel);
  char *b = tu_read_file(src, &len);
  ck_assert_msg(b != NULL, "cannot read %s", src);
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", cm_tmpdir(), name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(b);
}

/* `plan --shape` refuses a shape with the same status for a CSV (where
 * the shape is only the cache key) as for a .tflite: text that is not a
 * shape, the empty text included, is a usage error (64); dims no shape
 * can have are bad input (65). With or without --local. */
START_TEST(test_shape_same_status_any_file)
{
  static const struct {
    const char *shape;
    int status;
    const char *msg;
  } cases[] = {
      {"", 64, "no dimensions given"},
      {"-1", 65, "a dimension is negative"},
      {"4x-1", 65, "a dimension is negative"},
      {"4y1", 64, "expected dimensions like"},
      {"1,,2", 64, "expected dimensions like"},
      {"9999999999999999999", 65, "a dimension is too large"},
  };
  static const char *const files[] = {"m.csv", "m.tflite"};
  copy_data("models/hello_world_float.csv", "m.csv");
  copy_data("models/hello_world_float.tflite", "m.tflite");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (size_t f = 0; f < 2; f++)
      for (int local = 0; local < 2; local++) {
        struct run r;
        if (local)
          RUN(&r, "plan", "--local", "--shape", cases[k].shape, files[f]);
        else /* the daemon is never reached: the shape is refused first */
          RUN(&r, "plan", "-s", "no.sock", "--no-fallback", "--shape",
              cases[k].shape, files[f]);
        ck_assert_msg(r.status == cases[k].status,
                      "--shape '%s' %s: status %d, want %d: %s",
                      cases[k].shape, files[f], r.status, cases[k].status,
                      r.err);
        cm_assert_contains(r.err, cases[k].msg);
        ck_assert_uint_eq(r.out_len, 0);
        cm_run_free(&r);
      }
}
END_TEST

/* One tensor of 2^63 - 1 bytes plans at alignment 1 (its offset needs no
 * padding), not at alignment 2; its last operator may be 2^63 - 2, not
 * 2^63 - 1. */
START_TEST(test_largest_tensor)
{
  struct run r;
  put_file("max.csv", "id,size,first,last\n"
                      "0,9223372036854775807,0,9223372036854775806\n");
  put_file("last.csv", "id,size,first,last\n"
                       "0,1,0,9223372036854775807\n");
  put_file("mm.csv", "id,lower,upper,size\n"
                     "0,0,9223372036854775807,9223372036854775807\n");
  static const char *const ok[] = {"max.csv", "mm.csv"};
  for (size_t k = 0; k < 2; k++) {
    RUN(&r, "plan", "--local", "--align", "1", ok[k]);
    ck_assert_msg(r.status == 0, "%s: %s", ok[k], r.err);
    cm_assert_contains(r.out, "arena:           9223372036854775807 bytes");
    cm_run_free(&r);
  }
  RUN(&r, "plan", "--local", "--align", "2", "max.csv");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "exceed 2^63 - 1 bytes at tensor 0");
  cm_run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "last.csv");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "tensor 0: last operator too large");
  cm_run_free(&r);
}
END_TEST

/* explain and render chart up to 10^7 operators (the largest last
 * operator 9999999); one more is refused with exit 65. */
START_TEST(test_operator_limit)
{
  put_file("ops_max.csv", "id,size,first,last\n0,10,0,9999999\n1,10,5,6\n");
  put_file("ops_over.csv", "id,size,first,last\n0,10,0,10000000\n1,10,5,6\n");
  static const char *const cmds[] = {"explain", "render"};
  for (size_t c = 0; c < 2; c++) {
    struct run r;
    if (c == 0) /* explain has no -o: its output goes to stdout */
      RUN(&r, cmds[c], "--align", "1", "ops_max.csv");
    else
      RUN(&r, cmds[c], "--align", "1", "ops_max.csv", "-o", "out.svg");
    ck_assert_msg(r.status == 0, "%s: %s", cmds[c], r.err);
    cm_run_free(&r);
    RUN(&r, cmds[c], "--align", "1", "ops_over.csv");
    ck_assert_int_eq(r.status, 65);
    cm_assert_contains(r.err, "more than 10000000 operators cannot be charted");
    cm_run_free(&r);
  }
}
END_TEST

/* ---- the memory of refusing an input -------------------------------------- */

#define SOURCE_BYTES ((size_t)256 << 20) /* each bounded source */
#define MEM_BOUND_KIB (64L << 10)        /* peak resident memory allowed */

/* What a bounded source holds: head, then pattern repeated, SOURCE_BYTES
 * in all. */
struct source {
  const char *head;    /* written first, may be "" */
  const char *pattern; /* then repeated; NULL: zero bytes */
  size_t pattern_len;  /* bytes of pattern */
};

/* Writes the source to fd, stopping early when the reader goes away;
 * runs in a child process of its own. */
static void write_source(int fd, const struct source *src)
{
  static char zeros[1 << 16];
  char chunk[1 << 16];
  size_t n = 0, fill = 0;
  const char *rep = src->pattern ? src->pattern : zeros;
  size_t rlen = src->pattern ? src->pattern_len : sizeof zeros;
  while (fill + rlen <= sizeof chunk) {
    memcpy(chunk + fill, rep, rlen);
    fill += rlen;
  }
  size_t hl = strlen(src->head);
  if (hl && write(fd, src->head, hl) != (ssize_t)hl)
    _exit(0);
  for (n = hl; n < SOURCE_BYTES;) {
    size_t k = SOURCE_BYTES - n < fill ? SOURCE_BYTES - n : fill;
    ssize_t w = write(fd, chunk, k);
    if (w <= 0)
      _exit(0);
    n += (size_t)w;
  }
  _exit(0);
}

/* Runs arenactl (args, NULL-terminated) in the temp dir, its standard
 * input the source (src) or the file in_path (src NULL), its standard
 * error kept in *err (owned); returns its exit status and sets *kib to
 * its peak resident memory. */
static int run_measured(const char *const *args, const struct source *src,
                        const char *in_path, long *kib, char **err)
{
  char exe[PATH_MAX], errp[PATH_MAX + 16];
  ck_assert_ptr_nonnull(realpath(tu_bin("ARENACTL"), exe));
  snprintf(errp, sizeof errp, "%s/.measured", cm_tmpdir());
  int pipefd[2] = {-1, -1};
  pid_t writer = -1;
  if (src) {
    ck_assert_int_eq(pipe(pipefd), 0);
    writer = fork();
    ck_assert_int_ge(writer, 0);
    if (writer == 0) {
      close(pipefd[0]);
      signal(SIGPIPE, SIG_DFL);
      write_source(pipefd[1], src);
    }
    close(pipefd[1]);
  }
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int in = src ? pipefd[0] : open(in_path, O_RDONLY);
    int out = open("/dev/null", O_WRONLY);
    int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || e < 0 || chdir(cm_tmpdir()) != 0 ||
        dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(e, 2) < 0)
      _exit(127);
    const char *argv[16] = {exe};
    for (size_t k = 0; args[k] && k < 14; k++)
      argv[k + 1] = args[k];
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  if (src)
    close(pipefd[0]);
  int st = 0;
  struct rusage ru;
  ck_assert_int_eq(wait4(pid, &st, 0, &ru), pid);
  if (writer > 0)
    ck_assert_int_eq(waitpid(writer, NULL, 0), writer);
  *kib = ru.ru_maxrss;
  *err = tu_read_file(errp, NULL);
  ck_assert_ptr_nonnull(*err);
  ck_assert_msg(WIFEXITED(st), "arenactl died of signal %d", WTERMSIG(st));
  return WEXITSTATUS(st);
}

/* Asserts that arenactl refuses the source with status and a message
 * containing msg, within MEM_BOUND_KIB. */
static void assert_refused_cheaply(const char *const *args,
                                   const struct source *src,
                                   const char *in_path, int status,
                                   const char *msg)
{
  long kib;
  char *err;
  int rc = run_measured(args, src, in_path, &kib, &err);
  ck_assert_msg(kib < MEM_BOUND_KIB, "%s %s: %ld KiB to refuse it: %s",
                args[0], src ? src->head : in_path, kib, err);
  ck_assert_msg(rc == status, "%s %s: status %d, want %d: %s", args[0],
                src ? src->head : in_path, rc, status, err);
  cm_assert_contains(err, msg);
  free(err);
}

/* Bounded streams that can begin no valid input, on standard input:
 * each is refused at its first error, within the bound, however long. */
START_TEST(test_refusing_costs_little)
{
  static const char *const plan[] = {"plan", "--local", "-", NULL};
  static const char *const explain[] = {"explain", "-", NULL};
  static const char *const import[] = {"import", "-", NULL};
  static const char junk[] = {'\x13', '\xf1', '\n', '\x00', 'q', '\xa7'};
  const struct source zeros = {"", NULL, 0};
  const struct source binary = {"", junk, sizeof junk};
  const struct source yes = {"", "y\n", 2};
  const struct source no_line_end = {"", "y", 1};
  const struct source rows_then_junk = {"id,size,first,last\n0,8,0,1\n",
                                        "x\n", 2};
  const struct source json_junk = {"{\"tensors\":[", "\x00", 1};
  assert_refused_cheaply(plan, &zeros, NULL, 65,
                         "line 1: longer than 1048576 bytes");
  assert_refused_cheaply(plan, &binary, NULL, 65, "line 1: missing header");
  assert_refused_cheaply(plan, &yes, NULL, 65, "line 1: missing header");
  assert_refused_cheaply(plan, &no_line_end, NULL, 65, "longer than");
  assert_refused_cheaply(plan, &rows_then_junk, NULL, 65,
                         "line 3: expected 4 fields, found 1");
  assert_refused_cheaply(explain, &zeros, NULL, 65, "longer than");
  assert_refused_cheaply(explain, &json_junk, NULL, 65,
                         "plan JSON, byte 12: expected '{'");
  assert_refused_cheaply(import, &zeros, NULL, 65, "not a TFLite model");
}
END_TEST

/* Files: one of 512 MiB of zero bytes (sparse, under the size limit) is
 * refused at its first MiB; one over the limit by its size, unread. */
START_TEST(test_refusing_files_costs_little)
{
  static const char *const plan[] = {"plan", "--local", "big", NULL};
  static const char *const embed[] = {"embed", "big", "-o", "out", NULL};
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/big", cm_tmpdir());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)512 << 20), 0);
  assert_refused_cheaply(plan, NULL, "/dev/null", 65, "longer than");
  assert_refused_cheaply(embed, NULL, "/dev/null", 65, "not a TFLite model");
  ck_assert_int_eq(ftruncate(fd, ((off_t)1 << 30) + 1), 0);
  ck_assert_int_eq(close(fd), 0);
  assert_refused_cheaply(plan, NULL, "/dev/null", 66,
                         "file is larger than 1073741824 bytes");
}
END_TEST

void cm_add_input_tests(Suite *s)
{
  TCase *tc = tcase_create("input");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_shape_same_status_any_file);
  tcase_add_test(tc, test_largest_tensor);
  tcase_add_test(tc, test_operator_limit);
  tcase_add_test(tc, test_refusing_costs_little);
  tcase_add_test(tc, test_refusing_files_costs_little);
  suite_add_tcase(s, tc);
}
