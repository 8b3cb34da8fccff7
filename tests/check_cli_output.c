/*
 * check_cli_output.c - the "output" cases of the cli suite: how arenactl
 * writes the files it is asked to (client/cli/cli_write.c), through
 * import -o, render -o and embed -o, and through the helper itself.
 *
 * What they hold against: a symbolic link planted at a temporary name,
 * the output path being a symbolic link, a FIFO, a character device or a
 * directory, a folder the user cannot write, a write that fails half way
 * (a file size limit), and the mode and content of what is written.
 * Device nodes are made in the test's own directory when run as root
 * (mknod), so that nothing outside it is ever at risk; /dev/null stands
 * in otherwise. The unwritable folder is tested as user nobody when run
 * as root (root writes any folder).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_cli.h"
#include "cli_write.h"
#include "testutil.h"

static char *dir; /* fresh per test */

static void setup(void)
{
  dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
}

static void teardown(void)
{
  tu_rm_rf(dir);
  free(dir);
  dir = NULL;
}

/* dir/name in a static buffer (four in turn). */
static const char *at(const char *name)
{
  static char buf[4][700];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, sizeof buf[0], "%s/%s", dir, name);
  return p;
}

static void put(const char *path, const char *text)
{
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

static void assert_file(const char *path, const char *text)
{
  char *got = tu_read_file(path, NULL);
  ck_assert_msg(got != NULL, "%s: cannot read", path);
  ck_assert_str_eq(got, text);
  free(got);
}

static void assert_link(const char *path, const char *to)
{
  char buf[700];
  ssize_t n = readlink(path, buf, sizeof buf - 1);
  ck_assert_msg(n > 0, "%s is no longer a symbolic link", path);
  buf[n] = '\0';
  ck_assert_str_eq(buf, to);
}

/* How many entries of dir begin with prefix. */
static int count_prefix(const char *prefix)
{
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

static const char *model(void)
{
  static char path[600];
  snprintf(path, sizeof path, "%s/models/hello_world_float.tflite",
           tu_data_dir());
  return path;
}

/* ---- running arenactl with a umask, a user or a file size limit ---------- */

struct spawn {
  mode_t umask;      /* the child's umask */
  uid_t uid;         /* 0: keep; else setgid/setuid to it (root only) */
  long fsize_limit;  /* > 0: RLIMIT_FSIZE, with SIGXFSZ ignored */
};

struct run {
  int status;
  char *out, *err; /* owned */
};

static void run_with(struct run *r, const struct spawn *sp,
                     const char *const *args)
{
  const char *argv[16];
  size_t n = 0;
  argv[n++] = cli_test_arenactl();
  for (; args[n - 1] && n < 15; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  char o[700], e[700];
  snprintf(o, sizeof o, "%s.out", dir);
  snprintf(e, sizeof e, "%s.err", dir);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0 ||
        dup2(fe, 2) < 0)
      _exit(126);
    umask(sp ? sp->umask : 022);
    if (sp && sp->fsize_limit > 0) {
      struct rlimit rl = {(rlim_t)sp->fsize_limit, (rlim_t)sp->fsize_limit};
      signal(SIGXFSZ, SIG_IGN);
      if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(126);
    }
    if (sp && sp->uid && (setgid(sp->uid) != 0 || setuid(sp->uid) != 0))
      _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  ck_assert_msg(r->status != 127 && r->status != 126, "cannot run %s",
                argv[0]);
  r->out = tu_read_file(o, NULL);
  r->err = tu_read_file(e, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
  unlink(o);
  unlink(e);
}

static void run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

#define RUN(r, ...) run_with((r), NULL, (const char *const[]){__VA_ARGS__, NULL})

static void assert_has(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in:\n%s", needle,
                hay);
}

/* What `import MODEL` prints on stdout: what every -o FILE must hold. */
static char *import_text(void)
{
  struct run r;
  RUN(&r, "import", model());
  ck_assert_int_eq(r.status, 0);
  free(r.err);
  return r.out;
}

/* The three local commands that write a file, each with -o path. */
static void writer_args(int which, const char *path, const char *args[8])
{
  static char svg[600];
  switch (which) {
  case 0:
    args[0] = "import", args[1] = model(), args[2] = "-o", args[3] = path;
    args[4] = NULL;
    break;
  case 1:
    snprintf(svg, sizeof svg, "%s/models/hello_world_float.csv",
             tu_data_dir());
    args[0] = "render", args[1] = svg, args[2] = "-o", args[3] = path;
    args[4] = NULL;
    break;
  default:
    args[0] = "embed", args[1] = model(), args[2] = "-o", args[3] = path;
    args[4] = NULL;
  }
}

/* ---- the helper, with the temporary names chosen by the test ------------- */

/* Suffixes AAAAAA, BBBBBB, ... one letter per try; with fixed = 1 always
 * AAAAAA. */
static void test_suffix(void *ctx, unsigned attempt,
                        char s[CLI_WRITE_SUFFIX_LEN + 1])
{
  int fixed = *(int *)ctx;
  memset(s, 'A' + (fixed ? 0 : (int)(attempt % 26)), CLI_WRITE_SUFFIX_LEN);
  s[CLI_WRITE_SUFFIX_LEN] = '\0';
}

/* Whatever stands at the temporary names tried first (a symbolic link
 * to a victim, a dangling link, a FIFO, a regular file) is skipped and
 * left as it was; the file is written through the first free name. */
START_TEST(helper_skips_planted_names)
{
  put(at("victim"), "victim\n");
  ck_assert_int_eq(symlink(at("victim"), at(".out.csv.AAAAAA")), 0);
  ck_assert_int_eq(symlink(at("nowhere"), at(".out.csv.BBBBBB")), 0);
  ck_assert_int_eq(mkfifo(at(".out.csv.CCCCCC"), 0600), 0);
  put(at(".out.csv.DDDDDD"), "someone's\n");
  int fixed = 0;
  ck_assert_int_eq(cli__write_file(at("out.csv"), "new\n", 4, test_suffix,
                                   &fixed),
                   0);
  assert_file(at("out.csv"), "new\n");
  assert_file(at("victim"), "victim\n");
  assert_link(at(".out.csv.AAAAAA"), at("victim"));
  assert_link(at(".out.csv.BBBBBB"), at("nowhere"));
  struct stat st;
  ck_assert_int_eq(lstat(at(".out.csv.CCCCCC"), &st), 0);
  ck_assert(S_ISFIFO(st.st_mode));
  assert_file(at(".out.csv.DDDDDD"), "someone's\n");
  ck_assert_int_eq(access(at("nowhere"), F_OK), -1);
  /* The name it used is gone: renamed to out.csv. */
  ck_assert_int_eq(access(at(".out.csv.EEEEEE"), F_OK), -1);
  ck_assert_int_eq(count_prefix(".out.csv."), 4);
}
END_TEST

/* Every name planted: nothing written anywhere, a clear failure. */
START_TEST(helper_gives_up_when_every_name_is_taken)
{
  put(at("victim"), "victim\n");
  put(at("out.csv"), "old\n");
  ck_assert_int_eq(symlink(at("victim"), at(".out.csv.AAAAAA")), 0);
  int fixed = 1;
  ck_assert_int_eq(cli__write_file(at("out.csv"), "new\n", 4, test_suffix,
                                   &fixed),
                   74);
  assert_file(at("victim"), "victim\n");
  assert_file(at("out.csv"), "old\n");
  assert_link(at(".out.csv.AAAAAA"), at("victim"));
  ck_assert_int_eq(count_prefix(".out.csv."), 1);
}
END_TEST

/* ---- through the commands ------------------------------------------------- */

/* The temporary name earlier versions used, FILE.tmp, planted as a link
 * to a victim: the victim is untouched, FILE written. */
START_TEST(output_planted_tmp_link)
{
  char *want = import_text();
  put(at("victim"), "victim\n");
  ck_assert_int_eq(symlink(at("victim"), at("out.csv.tmp")), 0);
  ck_assert_int_eq(symlink(at("victim"), at(".out.csv.tmp")), 0);
  struct run r;
  RUN(&r, "import", model(), "-o", at("out.csv"));
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
  assert_file(at("out.csv"), want);
  assert_file(at("victim"), "victim\n");
  assert_link(at("out.csv.tmp"), at("victim"));
  ck_assert_int_eq(count_prefix(".out.csv."), 1); /* the planted one */
  free(want);
}
END_TEST

/* -o naming a symbolic link (to a file, or to nothing): refused by every
 * command, the link and its target as they were. */
START_TEST(output_symlink_refused)
{
  put(at("victim"), "victim\n");
  ck_assert_int_eq(symlink(at("victim"), at("link")), 0);
  ck_assert_int_eq(symlink(at("absent"), at("dangling")), 0);
  for (int w = 0; w < 3; w++) {
    const char *names[] = {"link", "dangling"};
    for (int k = 0; k < 2; k++) {
      const char *args[8];
      writer_args(w, at(names[k]), args);
      struct run r;
      run_with(&r, NULL, args);
      ck_assert_msg(r.status == 74, "%s -o %s: exit %d: %s", args[0],
                    names[k], r.status, r.err);
      assert_has(r.err, "is a symbolic link");
      run_free(&r);
    }
  }
  assert_file(at("victim"), "victim\n");
  assert_link(at("link"), at("victim"));
  assert_link(at("dangling"), at("absent"));
  ck_assert_int_eq(access(at("absent"), F_OK), -1);
  ck_assert_int_eq(count_prefix("."), 2); /* "." and ".." alone */
}
END_TEST

/* -o naming a FIFO: written in place (a reader gets every byte), the
 * FIFO still a FIFO; also through a symbolic link to it. */
START_TEST(output_fifo_written_in_place)
{
  char *want = import_text();
  ck_assert_int_eq(mkfifo(at("pipe"), 0600), 0);
  ck_assert_int_eq(symlink(at("pipe"), at("pipe-link")), 0);
  const char *names[] = {"pipe", "pipe-link"};
  for (int k = 0; k < 2; k++) {
    pid_t reader = fork();
    ck_assert_int_ge(reader, 0);
    if (reader == 0) {
      alarm(30);
      int in = open(at("pipe"), O_RDONLY);
      int out = open(at("got"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      char buf[4096];
      ssize_t n;
      while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
          _exit(1);
      _exit(in < 0 || out < 0);
    }
    struct run r;
    RUN(&r, "import", model(), "-o", at(names[k]));
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_free(&r);
    int st;
    ck_assert_int_eq(waitpid(reader, &st, 0), reader);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_file(at("got"), want);
    struct stat s;
    ck_assert_int_eq(lstat(at("pipe"), &s), 0);
    ck_assert(S_ISFIFO(s.st_mode));
  }
  assert_link(at("pipe-link"), at("pipe"));
  free(want);
}
END_TEST

/* A character device: written in place, never replaced. As root the
 * nodes are the test's own copies of null (1,3) and full (1,7); the
 * full one makes the write fail (74), and stays a device. */
START_TEST(output_device_written_in_place)
{
  const char *null_dev = "/dev/null", *full_dev = NULL;
  if (geteuid() == 0) {
    ck_assert_int_eq(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
    ck_assert_int_eq(mknod(at("full"), S_IFCHR | 0666, makedev(1, 7)), 0);
    null_dev = at("null");
    full_dev = at("full");
  }
  struct stat before, after;
  ck_assert_int_eq(stat(null_dev, &before), 0);
  for (int w = 0; w < 3; w++) {
    const char *args[8];
    writer_args(w, null_dev, args);
    struct run r;
    run_with(&r, NULL, args);
    ck_assert_msg(r.status == 0, "%s -o %s: exit %d: %s", args[0], null_dev,
                  r.status, r.err);
    run_free(&r);
    ck_assert_int_eq(lstat(null_dev, &after), 0);
    ck_assert(S_ISCHR(after.st_mode));
    ck_assert_uint_eq(after.st_rdev, before.st_rdev);
    ck_assert_uint_eq(after.st_ino, before.st_ino);
  }
  if (full_dev) {
    ck_assert_int_eq(symlink(full_dev, at("full-link")), 0);
    const char *names[] = {full_dev, at("full-link")};
    for (int k = 0; k < 2; k++) {
      struct run r;
      RUN(&r, "import", model(), "-o", names[k]);
      ck_assert_int_eq(r.status, 74);
      assert_has(r.err, "No space left on device");
      run_free(&r);
      ck_assert_int_eq(lstat(full_dev, &after), 0);
      ck_assert(S_ISCHR(after.st_mode));
      ck_assert_uint_eq(after.st_rdev, makedev(1, 7));
    }
  }
  /* /dev/stdout, when standard output is a file (as here): a link to a
   * regular file, refused, and standard output left alone. */
  struct run r;
  RUN(&r, "import", model(), "-o", "/dev/stdout");
  ck_assert_int_eq(r.status, 74);
  assert_has(r.err, "is a symbolic link");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
}
END_TEST

/* A directory (named plainly, with a slash, or as . and ..): refused. */
START_TEST(output_directory_refused)
{
  ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
  const char *names[] = {at("sub"), at("sub/"), at("sub/."), at("sub/..")};
  for (size_t k = 0; k < 4; k++) {
    struct run r;
    RUN(&r, "import", model(), "-o", names[k]);
    ck_assert_msg(r.status == 74, "%s: exit %d", names[k], r.status);
    assert_has(r.err, "directory");
    run_free(&r);
  }
  struct stat st;
  ck_assert_int_eq(lstat(at("sub"), &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  DIR *d = opendir(at("sub"));
  ck_assert_ptr_nonnull(d);
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  ck_assert_int_eq(n, 2);
}
END_TEST

/* A folder the user cannot write: 74, nothing created. As root the run
 * is as nobody (65534), since root writes any folder. */
START_TEST(output_unwritable_folder)
{
  struct spawn sp = {022, 0, 0};
  ck_assert_int_eq(mkdir(at("ro"), 0755), 0);
  if (geteuid() == 0) {
    ck_assert_int_eq(chmod(dir, 0755), 0);
    sp.uid = 65534;
  } else {
    ck_assert_int_eq(chmod(at("ro"), 0555), 0);
  }
  struct run r;
  run_with(&r, &sp,
           (const char *const[]){"import", model(), "-o", at("ro/out.csv"),
                                 NULL});
  ck_assert_int_eq(r.status, 74);
  assert_has(r.err, "cannot create a temporary file in");
  assert_has(r.err, "Permission denied");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  DIR *d = opendir(at("ro"));
  ck_assert_ptr_nonnull(d);
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  ck_assert_int_eq(n, 2);
}
END_TEST

/* The content is what stdout gets; a new file has mode 0666 less the
 * umask; a replaced file keeps its permission bits. */
START_TEST(output_content_and_mode)
{
  char *want = import_text();
  struct stat st;
  static const mode_t masks[] = {022, 077, 002};
  for (size_t k = 0; k < 3; k++) {
    unlink(at("out.csv"));
    struct spawn sp = {masks[k], 0, 0};
    struct run r;
    run_with(&r, &sp,
             (const char *const[]){"import", model(), "-o", at("out.csv"),
                                   NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_free(&r);
    assert_file(at("out.csv"), want);
    ck_assert_int_eq(stat(at("out.csv"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0666 & ~masks[k]);
  }
  put(at("out.csv"), "old\n");
  ck_assert_int_eq(chmod(at("out.csv"), 0640), 0);
  struct spawn sp = {077, 0, 0};
  struct run r;
  run_with(&r, &sp,
           (const char *const[]){"import", model(), "-o", at("out.csv"),
                                 NULL});
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
  assert_file(at("out.csv"), want);
  ck_assert_int_eq(stat(at("out.csv"), &st), 0);
  ck_assert_uint_eq(st.st_mode & 07777, 0640);
  ck_assert_int_eq(count_prefix(".out.csv."), 0);
  /* -o - is standard output. */
  RUN(&r, "import", model(), "-o", "-");
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, want);
  run_free(&r);
  free(want);
}
END_TEST

/* A write that fails half way (a file size limit below the file's, and
 * above what arenactl prints on stderr, which the limit binds too): 74,
 * the old file whole, no temporary file left. */
START_TEST(output_failed_write_leaves_nothing)
{
  put(at("out.csv"), "old\n");
  struct spawn sp = {022, 0, 400};
  for (int w = 0; w < 3; w++) {
    const char *args[8];
    writer_args(w, at("out.csv"), args);
    struct run r;
    run_with(&r, &sp, args);
    ck_assert_msg(r.status == 74, "%s: exit %d: %s", args[0], r.status,
                  r.err);
    assert_has(r.err, "cannot write");
    run_free(&r);
    assert_file(at("out.csv"), "old\n");
    ck_assert_int_eq(count_prefix(".out.csv."), 0);
  }
}
END_TEST

void cli_add_output(Suite *s)
{
  TCase *tc = tcase_create("write");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, helper_skips_planted_names);
  tcase_add_test(tc, helper_gives_up_when_every_name_is_taken);
  tcase_add_test(tc, output_planted_tmp_link);
  tcase_add_test(tc, output_symlink_refused);
  tcase_add_test(tc, output_fifo_written_in_place);
  tcase_add_test(tc, output_device_written_in_place);
  tcase_add_test(tc, output_directory_refused);
  tcase_add_test(tc, output_unwritable_folder);
  tcase_add_test(tc, output_content_and_mode);
  tcase_add_test(tc, output_failed_write_leaves_nothing);
  suite_add_tcase(s, tc);
}
