/*
 * testutil.c - helpers shared by the Check suites (see testutil.h).
 */
#include "testutil.h"

#include "graph_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

char *tu_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    cap *= 2;
    char *nb = realloc(buf, cap + 1);
    if (!nb) {
      free(buf);
      buf = NULL;
    }
    buf = nb;
  }
  fclose(f);
  if (!buf)
    return NULL;
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

char *tu_mkdtemp(void)
{
  const char *base = getenv("TMPDIR");
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/arenad-test-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(tmpl))
    return NULL;
  return strdup(tmpl);
}

void tu_rm_rf(const char *path)
{
  if (!path || !*path)
    return;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0)
    fprintf(stderr, "testutil: could not remove %s\n", path);
}

uint64_t tu_rand(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tu_rand_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
  if (hi <= lo)
    return lo;
  uint64_t span = hi - lo + 1;
  return span == 0 ? tu_rand(s) : lo + tu_rand(s) % span;
}

const char *tu_data_dir(void)
{
  const char *d = getenv("ARENA_TEST_DATA");
  return d && *d ? d : "tests/data";
}

int tu_load_csv(const char *path, struct planner_csv *c)
{
  char err[ARENA_ERR_LEN] = "";
  size_t len;
  planner_csv_init(c);
  char *buf = tu_read_file(path, &len);
  if (!buf) {
    fprintf(stderr, "testutil: cannot read %s\n", path);
    return -1;
  }
  int rc = planner_csv_parse(buf, len, c, err);
  free(buf);
  if (rc)
    fprintf(stderr, "testutil: %s: %s\n", path, err);
  return rc ? -1 : 0;
}

static void redirect(const char *path, int fd, int flags)
{
  int f = open(path, flags, 0600);
  if (f < 0 || dup2(f, fd) < 0)
    _exit(127);
  close(f);
}

int tu_run(const char *const *argv, const char *cwd, const char *in_path,
           const char *out_path, const char *err_path)
{
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    return 127;
  if (pid == 0) {
    if (cwd && chdir(cwd) != 0)
      _exit(127);
    redirect(in_path ? in_path : "/dev/null", 0, O_RDONLY);
    redirect(out_path, 1, O_WRONLY | O_CREAT | O_TRUNC);
    redirect(err_path, 2, O_WRONLY | O_CREAT | O_TRUNC);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid)
    return 127;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tu_hogs_start(struct tu_hogs *h, int n, unsigned max_s)
{
  h->n = 0;
  if (n > TU_MAX_HOGS)
    n = TU_MAX_HOGS;
  fflush(NULL);
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      tu_hogs_stop(h);
      return -1;
    }
    if (pid == 0) {
      alarm(max_s); /* SIGALRM ends the hog if nobody kills it */
      for (volatile uint64_t x = 0;; x++)
        ;
    }
    h->pid[h->n++] = (int)pid;
  }
  errno = 0;
  if (nice(10) == -1 && errno != 0) {
    tu_hogs_stop(h);
    return -1;
  }
  return 0;
}

void tu_hogs_stop(struct tu_hogs *h)
{
  for (int i = 0; i < h->n; i++) {
    kill((pid_t)h->pid[i], SIGKILL);
    waitpid((pid_t)h->pid[i], NULL, 0);
  }
  h->n = 0;
}
