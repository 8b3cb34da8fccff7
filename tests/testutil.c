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
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
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

const char *tu_bin(const char *env)
{
  const char *p = getenv(env);
  if (!p || !*p) {
    fprintf(stderr, "testutil: %s is not set: run the tests through "
                    "tests/run.sh or make, which set it from BUILD\n",
            env);
    abort();
  }
  if (access(p, X_OK) != 0) {
    fprintf(stderr, "testutil: %s=%s: no such program (%s)\n", env, p,
            strerror(errno));
    abort();
  }
  return p;
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

/* The guard of tu_stop_start(): waits on the pipe for the word that the
 * test is done with the stopped process; at EOF (the test process is
 * gone) or after max_s seconds it resumes and kills the process. */
static void stop_guard(int fd, pid_t target, unsigned max_s)
{
  struct pollfd p = {fd, POLLIN, 0};
  char b = 0;
  int r;
  while ((r = poll(&p, 1, (int)max_s * 1000)) < 0 && errno == EINTR)
    ;
  if (r <= 0 || read(fd, &b, 1) != 1) {
    kill(target, SIGCONT);
    kill(target, SIGKILL);
  }
  _exit(0);
}

int tu_stop_start(struct tu_stop *s, int pid, unsigned max_s)
{
  int fds[2];
  s->target = 0;
  s->guard = 0;
  s->fd = -1;
  if (pid <= 0 || pipe(fds) != 0)
    return -1;
  /* Close-on-exec: a program the test starts must not hold the pipe
   * open, or the guard would miss the test's end. */
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  pid_t g = fork();
  if (g < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (g == 0) {
    close(fds[1]);
    stop_guard(fds[0], (pid_t)pid, max_s);
  }
  close(fds[0]);
  s->guard = (int)g;
  s->fd = fds[1];
  if (kill((pid_t)pid, SIGSTOP) != 0) {
    tu_stop_end(s);
    return -1;
  }
  s->target = pid;
  /* A child of ours reports the stop to waitpid; give it 5 s. Any other
   * process is taken as stopped once the signal is sent. */
  for (int i = 0; i < 500; i++) {
    int st;
    pid_t r = waitpid((pid_t)pid, &st, WUNTRACED | WNOHANG);
    if (r != 0)
      break;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

void tu_stop_end(struct tu_stop *s)
{
  if (s->target > 0)
    kill((pid_t)s->target, SIGCONT);
  if (s->fd >= 0) {
    char b = 1;
    if (write(s->fd, &b, 1) != 1)
      b = 0; /* the guard is gone already */
    close(s->fd);
  }
  if (s->guard > 0)
    waitpid((pid_t)s->guard, NULL, 0);
  s->target = 0;
  s->guard = 0;
  s->fd = -1;
}

double tu_proc_cpu_us(int pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* the name may hold spaces */
  unsigned long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                   &ut, &st) != 2)
    return 0;
  return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}
