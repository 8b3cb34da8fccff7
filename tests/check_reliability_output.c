/*
 * check_reliability_output.c - the reliability suite's test of the files
 * arenactl writes (see check_reliability.c):
 *
 *   symlink     `arenactl export -o DIR/out.bundle` against a real
 *               daemon while a hostile process plants symbolic links to
 *               a victim file: at the name earlier versions used
 *               (out.bundle.tmp), at guessed temporary names, and, in a
 *               loop for the whole test, at every new name that appears
 *               in DIR (the temporary files as arenactl creates them).
 *               The victim is never written; every export that succeeds
 *               leaves a bundle that reads back with the stored plan;
 *               every other ends with status 74.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_reliability.h"
#include "testutil.h"
#include "wire_bundle.h"

#define VICTIM_TEXT "victim: must never change\n"

/* Links every entry of dir but keep (and the links it made itself) to
 * victim: unlink, then symlink, again and again until killed. Counts
 * the links it planted in *planted (shared memory). */
static void racer(const char *dir, const char *keep, const char *victim,
                  volatile uint64_t *planted)
{
  char path[PATH_MAX], to[PATH_MAX];
  for (;;) {
    DIR *d = opendir(dir);
    if (!d)
      _exit(1);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      if (e->d_name[0] == '.' && (e->d_name[1] == '\0' ||
                                  (e->d_name[1] == '.' && !e->d_name[2])))
        continue;
      if (strcmp(e->d_name, keep) == 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      ssize_t n = readlink(path, to, sizeof to - 1);
      if (n > 0) {
        to[n] = '\0';
        if (strcmp(to, victim) == 0)
          continue; /* one of ours */
      }
      (void)unlink(path);
      if (symlink(victim, path) == 0)
        *planted += 1;
    }
    closedir(d);
  }
}

/* Runs `arenactl -s SOCK export -o out`; returns its exit status. */
static int run_export(const struct harness *h, const char *out)
{
  char o[600], e[600];
  snprintf(o, sizeof o, "%s/export.out", h->dir);
  snprintf(e, sizeof e, "%s/export.err", h->dir);
  const char *argv[] = {rel_arenactl(), "-s", h->sock, "export", "-o", out,
                        NULL};
  return tu_run(argv, NULL, NULL, o, e);
}

START_TEST(test_symlink)
{
  if (rel_skipped("symlink"))
    return;
  struct figs f = {0};
  struct harness h;
  rel_setup(&h, NULL, NULL);
  ck_assert_int_eq(rel_start(&h), 0);
  struct vgraph v;
  rel_vgraph_make(&v, 60, 4242, PLANNER_ALGO_GREEDY_SIZE, "symlink");
  rel_expect_plan(&h, &v, &f);
  ck_assert_uint_eq(f.requests, 1);
  char dir[600], out[700], victim[700], path[800];
  snprintf(dir, sizeof dir, "%s/out", h.dir);
  snprintf(out, sizeof out, "%s/out.bundle", dir);
  snprintf(victim, sizeof victim, "%s/victim", h.dir);
  ck_assert_int_eq(mkdir(dir, 0777), 0);
  FILE *vf = fopen(victim, "w");
  ck_assert_ptr_nonnull(vf);
  fputs(VICTIM_TEXT, vf);
  ck_assert_int_eq(fclose(vf), 0);
  /* Planted before: the old name, and 1000 guessed temporary names. */
  snprintf(path, sizeof path, "%s.tmp", out);
  ck_assert_int_eq(symlink(victim, path), 0);
  f.bad_inputs++;
  uint64_t seed = 7;
  static const char abc[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int i = 0; i < 1000; i++) {
    char sfx[7];
    for (int k = 0; k < 6; k++)
      sfx[k] = abc[tu_rand(&seed) % (sizeof abc - 1)];
    sfx[6] = '\0';
    snprintf(path, sizeof path, "%s/.out.bundle.%s", dir, sfx);
    if (symlink(victim, path) == 0)
      f.bad_inputs++;
  }
  volatile uint64_t *planted = rel_shared_new(sizeof *planted);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    racer(dir, "out.bundle", victim, planted);
  }
  unsigned runs = rel_scaled(30, 300), ok = 0, refused = 0;
  for (unsigned i = 0; i < runs; i++) {
    /* The racer may have renamed one of its links to out.bundle (by
     * replacing a temporary file before its rename): start afresh. */
    struct stat st;
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode))
      unlink(out);
    int rc = run_export(&h, out);
    char *now = tu_read_file(victim, NULL);
    ck_assert_ptr_nonnull(now);
    if (strcmp(now, VICTIM_TEXT) != 0)
      f.wrong++;
    ck_assert_msg(strcmp(now, VICTIM_TEXT) == 0,
                  "run %u: the victim was written (export exit %d)", i, rc);
    free(now);
    if (rc == 74) {
      refused++;
      continue;
    }
    ck_assert_msg(rc == 0, "run %u: export exit %d", i, rc);
    /* A success left out.bundle: the bundle, unless the racer's link
     * took its place at the rename. */
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode)) {
      refused++;
      continue;
    }
    size_t len;
    char *b = tu_read_file(out, &len);
    ck_assert_ptr_nonnull(b);
    Arenad__V1__Bundle *got;
    char err[ARENA_ERR_LEN] = "";
    ck_assert_msg(wire_bundle_read((const uint8_t *)b, len, NULL, &got,
                                   err) == 0,
                  "run %u: %s", i, err);
    ck_assert_uint_eq(got->n_entries, 1);
    ck_assert_uint_eq(got->entries[0]->plan->n_offsets, v.g.n);
    wire_free_bundle(got);
    free(b);
    ok++;
    f.requests++;
  }
  kill(kid, SIGKILL);
  ck_assert_int_eq(rel_wait_child(kid), 128 + SIGKILL);
  f.bad_inputs += *planted;
  /* The link planted at the old name is as it was. */
  char to[PATH_MAX];
  snprintf(path, sizeof path, "%s.tmp", out);
  ssize_t n = readlink(path, to, sizeof to - 1);
  ck_assert_int_gt(n, 0);
  char extra[160];
  snprintf(extra, sizeof extra, "exports=%u written=%u refused=%u "
           "links_planted=%llu",
           runs, ok, refused, (unsigned long long)f.bad_inputs);
  rel_figs_report("symlink", &f, extra);
  ck_assert_uint_gt(ok, 0);
  ck_assert_uint_eq(f.wrong, 0);
  munmap((void *)planted, sizeof *planted);
  rel_vgraph_free(&v);
  hn_cleanup(&h);
}
END_TEST

void reliability_add_output(TCase *tc)
{
  tcase_add_test(tc, test_symlink);
}
