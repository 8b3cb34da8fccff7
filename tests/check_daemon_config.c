/*
 * check_daemon_config.c - the configuration file is read strictly: a key
 * set twice, an allow-list with an empty entry or a stray word, and a
 * database cap of 0 (which the storage would take for "no limit") are
 * each refused with a message that names the file, the line and the key,
 * and exit status 78 (EX_CONFIG), at start and for --check-config; on
 * SIGHUP such a file is logged and ignored.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

#define EX_CONFIG 78

struct run {
  int status; /* exit status */
  char *out;  /* stdout, owned */
  char *err;  /* stderr, owned */
};

/* Writes text as dir/arenad.conf and runs arenad on it, with
 * --check-config when check. Fills r; free with run_free. */
static void run_conf(const char *dir, const char *text, int check,
                     struct run *r)
{
  char conf[300], out[300], err[300], sock[300];
  snprintf(conf, sizeof conf, "%s/arenad.conf", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  snprintf(sock, sizeof sock, "%s/arenad.sock", dir);
  FILE *f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  /* Never the default paths, even if the file were taken. */
  fprintf(f, "socket = %s\ndatabase = %s/cache.db\n%s", sock, dir, text);
  fclose(f);
  const char *argv[] = {tu_bin("ARENAD"), "--config", conf,
                        check ? "--check-config" : NULL, NULL};
  r->status = tu_run(argv, NULL, NULL, out, err);
  r->out = tu_read_file(out, NULL);
  r->err = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
}

static void run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

/* Asserts that text is refused with exit 78 and a message containing
 * each of the NULL-ended strings in want, both at start and with
 * --check-config. */
static void refused(const char *dir, const char *text,
                    const char *const *want)
{
  for (int check = 1; check >= 0; check--) {
    struct run r;
    run_conf(dir, text, check, &r);
    ck_assert_msg(r.status == EX_CONFIG, "exit %d for:\n%s\nstderr: %s",
                  r.status, text, r.err);
    for (int i = 0; want[i]; i++)
      ck_assert_msg(strstr(r.err, want[i]) != NULL,
                    "'%s' not in the message: %s", want[i], r.err);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
  }
}
#define REFUSED(dir, text, ...) \
  refused((dir), (text), (const char *const[]){__VA_ARGS__, NULL})

/* Asserts that --check-config takes text and prints line. */
static void accepted(const char *dir, const char *text, const char *line)
{
  struct run r;
  run_conf(dir, text, 1, &r);
  ck_assert_msg(r.status == 0, "exit %d for:\n%s\nstderr: %s", r.status,
                text, r.err);
  ck_assert_msg(strstr(r.out, line) != NULL, "'%s' not in:\n%s", line,
                r.out);
  run_free(&r);
}

START_TEST(test_db_caps_zero_refused)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  REFUSED(dir, "[cache]\ndb_max_entries = 0\n", "arenad.conf:4: ",
          "cache.db_max_entries", "would mean no limit");
  REFUSED(dir, "[cache]\ndb_max_bytes = 0\n", "arenad.conf:4: ",
          "cache.db_max_bytes", "would mean no limit");
  accepted(dir, "[cache]\ndb_max_entries = 1\n", "\ndb_max_entries = 1\n");
  /* the in-memory caps keep 0: no plan is kept in memory */
  accepted(dir, "[cache]\nmemory_entries = 0\n", "\nmemory_entries = 0\n");
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

START_TEST(test_duplicate_key_refused)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  /* same value or not, same section twice or not */
  REFUSED(dir, "[limits]\nmax_connections = 3\nmax_connections = 3\n",
          "arenad.conf:5: ", "limits.max_connections is set more than once");
  REFUSED(dir, "[limits]\nmax_connections = 3\n[cache]\nmemory_bytes = 1M\n"
               "[limits]\nmax_connections = 4\n",
          "arenad.conf:8: ", "limits.max_connections is set more than once");
  /* before any section, then in its own */
  REFUSED(dir, "workers = 1\n[daemon]\nworkers = 2\n", "arenad.conf:5: ",
          "daemon.workers is set more than once");
  /* the harness's own keys count too */
  REFUSED(dir, "[daemon]\nsocket = /nonexistent/x.sock\n",
          "daemon.socket is set more than once");
  /* a deprecated name and the key it stands for */
  REFUSED(dir, "[planner]\ndefault_effort = 3\ndefault_budget_ms = 4\n",
          "planner.default_effort is set more than once",
          "planner.default_budget_ms is its old name");
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

START_TEST(test_allow_list_syntax)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  REFUSED(dir, "[access]\nallow_uids = 0,,1\n", "arenad.conf:4: ",
          "access.allow_uids", "empty entry");
  REFUSED(dir, "[access]\nallow_gids = 0,\n", "access.allow_gids",
          "empty entry");
  REFUSED(dir, "[access]\nallow_uids = , 7\n", "empty entry");
  REFUSED(dir, "[access]\nallow_uids = 0 1\n", "'0 1' is not a numeric id");
  REFUSED(dir, "[access]\nallow_uids = 1k\n", "'1k' is not a numeric id");
  REFUSED(dir, "[access]\nallow_uids = -1\n", "'-1' is not a numeric id");
  REFUSED(dir, "[access]\nallow_uids = 4294967295\n", "is not a numeric id");
  accepted(dir, "[access]\nallow_uids =  0 ,1000\t\n",
           "\nallow_uids = 0, 1000\n");
  accepted(dir, "[access]\nallow_gids =\n", "\nallow_gids =\n");
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* On SIGHUP a file with a duplicated key is logged and ignored: the
 * daemon keeps its configuration and serves. */
START_TEST(test_reload_refuses_duplicate)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_write_conf(&h, "[limits]\nmax_connections = 5\n"
                                     "max_connections = 6\n"),
                   0);
  ck_assert_int_eq(kill(h.pid, SIGHUP), 0);
  for (int i = 0; i < 1000 && hn_log_count(&h, "not reloaded") == 0; i++)
    nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
  ck_assert_int_eq(hn_log_count(&h, "not reloaded"), 1);
  ck_assert_int_eq(hn_log_count(&h, "max_connections is set more than once"), 1);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_ping(fd, 1, 10000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* A NUL byte cut its line where it stood, and the rest of the line was
 * dropped without a word: now the file is refused, naming the line. */
START_TEST(test_nul_byte_refused)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char conf[300], out[300], err[300];
  snprintf(conf, sizeof conf, "%s/arenad.conf", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  static const char text[] = "[daemon]\nsocket = /nonexistent/a.sock\n"
                             "[limits]\nmax_connections = 3\0 junk\n";
  FILE *f = fopen(conf, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
  fclose(f);
  const char *bin = getenv("ARENAD");
  for (int check = 1; check >= 0; check--) {
    const char *argv[] = {bin ? bin : "build/arenad", "--config", conf,
                          check ? "--check-config" : NULL, NULL};
    ck_assert_int_eq(tu_run(argv, NULL, NULL, out, err), EX_CONFIG);
    char *e = tu_read_file(err, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "arenad.conf:4: a NUL byte"), "%s", e);
    free(e);
  }
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* The database's folder is never made: a missing one is a configuration
 * error at start (78, nothing created), though --check-config, which
 * checks the text alone, takes it. A socket path too long for -s is a
 * usage error (64), like any bad option; in the file it is a
 * configuration error (78). */
START_TEST(test_paths_at_start)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char db[400], sock[300], missing[300], out[300], err[300];
  snprintf(missing, sizeof missing, "%s/missing", dir);
  snprintf(db, sizeof db, "%s/x.db", missing);
  snprintf(sock, sizeof sock, "%s/a.sock", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  const char *bin = getenv("ARENAD");
  bin = bin ? bin : "build/arenad";
  const char *start[] = {bin, "--config", "/dev/null", "-s", sock, "-d", db,
                         NULL};
  ck_assert_int_eq(tu_run(start, NULL, NULL, out, err), EX_CONFIG);
  char *e = tu_read_file(err, NULL);
  ck_assert_msg(strstr(e, "its folder") && strstr(e, "does not exist"), "%s",
                e);
  free(e);
  struct stat sb;
  ck_assert_int_ne(stat(missing, &sb), 0);
  const char *check[] = {bin, "--config", "/dev/null", "-s", sock, "-d", db,
                         "--check-config", NULL};
  ck_assert_int_eq(tu_run(check, NULL, NULL, out, err), 0);

  char longsock[150];
  memset(longsock, 'a', sizeof longsock - 1);
  longsock[0] = '/';
  longsock[sizeof longsock - 1] = '\0';
  const char *opt[] = {bin, "--config", "/dev/null", "-s", longsock,
                       "--check-config", NULL};
  ck_assert_int_eq(tu_run(opt, NULL, NULL, out, err), 64);
  e = tu_read_file(err, NULL);
  ck_assert_msg(strstr(e, "arenad: option: daemon.socket is longer"), "%s",
                e);
  free(e);
  char conf[300];
  snprintf(conf, sizeof conf, "%s/long.conf", dir);
  FILE *f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\n", longsock);
  fclose(f);
  const char *file[] = {bin, "--config", conf, "--check-config", NULL};
  ck_assert_int_eq(tu_run(file, NULL, NULL, out, err), EX_CONFIG);
  e = tu_read_file(err, NULL);
  ck_assert_msg(strstr(e, "arenad: configuration: daemon.socket is longer"),
                "%s", e);
  free(e);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

void cd_add_config_tests(TCase *tc)
{
  tcase_add_test(tc, test_db_caps_zero_refused);
  tcase_add_test(tc, test_duplicate_key_refused);
  tcase_add_test(tc, test_allow_list_syntax);
  tcase_add_test(tc, test_reload_refuses_duplicate);
  tcase_add_test(tc, test_nul_byte_refused);
  tcase_add_test(tc, test_paths_at_start);
}
