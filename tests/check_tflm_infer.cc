/*
 * check_tflm_infer.cc - the tflm_infer example (test case "infer" of
 * tflm_suite; C++): 8 processes at once against one arenad share one
 * plan (exactly one computed, from the daemon's counters); its errors
 * and exit statuses, the plan line when no plan was made, arenas around
 * the smallest that works with either planner, and a stopped arenad.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

extern "C" {
#include "testutil.h"
}
#include "check_tflm.h"

namespace {

using namespace check_tflm;

/* ---- infer -------------------------------------------------------------- */

/* 8 tflm_infer processes at once against one arenad: one plan computed,
 * the other 7 served from the hot cache or joined to the job in flight. */
START_TEST(test_infer_eight_processes) {
  constexpr int kProcs = 8;
  Daemon d;
  std::string model = ModelPath("person_detect");
  pid_t pids[kProcs];
  for (int i = 0; i < kProcs; i++) {
    std::string out = std::string(d.h.dir) + "/out." + std::to_string(i);
    pids[i] = fork();
    ck_assert_int_ge(pids[i], 0);
    if (pids[i] == 0) {
      int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      execl(TFLM_TEST_BUILD "/examples/tflm_infer", "tflm_infer", "--socket",
            d.h.sock, "--no-fallback", "--invokes", "2", "--values", "0",
            model.c_str(), (char *)NULL);
      _exit(127);
    }
  }
  int from_daemon = 0, from_cache = 0;
  std::string first_outputs;
  for (int i = 0; i < kProcs; i++) {
    int st;
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    std::string text =
        Slurp(std::string(d.h.dir) + "/out." + std::to_string(i));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: %s", i,
                  text.c_str());
    from_daemon += text.find("plan: from daemon,") != std::string::npos;
    from_cache += text.find("plan: from cache,") != std::string::npos;
    std::string outputs = text.substr(text.find("arena: "));
    if (i == 0)
      first_outputs = outputs;
    ck_assert_msg(outputs == first_outputs, "process %d printed other outputs",
                  i);
  }
  /* Exactly one planning job ran (plans_computed, with misses equal: a
   * miss is what starts a job). Each other request was either answered
   * from the hot LRU (memory_hits: it came after the job finished) or
   * waited for that job (single_flight_joined: it came while the job
   * ran); none could reach sqlite (storage_hits), since the finished job
   * fills the hot LRU before it answers. Joiners get the job's reply, so
   * they say "from daemon" like the first; hot hits say "from cache". */
  Counters c = Stats(&d.h);
  ck_assert_uint_eq(c.computed, 1);
  ck_assert_uint_eq(c.misses, 1);
  ck_assert_uint_eq(c.storage_hits, 0);
  ck_assert_uint_eq(c.memory_hits + c.joined, kProcs - 1);
  ck_assert_uint_eq(c.served, kProcs);
  ck_assert_int_eq(from_daemon, 1 + (int)c.joined);
  ck_assert_int_eq(from_cache, (int)c.memory_hits);
  printf("tflm infer: %d processes, plans computed %llu, hot-cache hits "
         "%llu, single-flight joins %llu\n",
         kProcs, (unsigned long long)c.computed,
         (unsigned long long)c.memory_hits, (unsigned long long)c.joined);
  fflush(stdout);
}
END_TEST

/* Appends "a-b" (or "a") for the run of arenas that ends at `last`,
 * started at `first`, to *text. */
void AddRange(std::string *text, int first, int last) {
  if (!text->empty())
    *text += ", ";
  *text += std::to_string(first);
  if (last != first)
    *text += "-" + std::to_string(last);
}

/* Runs tflm_infer on model with each planner and every arena from `from`
 * to `to` bytes in steps of `step`; counts[status]++ per run (statuses
 * above 127, a death by signal, fail the test), and a 70 must say that
 * TFLM crashed. Prints, per planner, the arenas on which TFLM crashed. */
void Sweep(const std::string &bin, const std::string &dir, const char *model,
           int from, int to, int step, int counts[128]) {
  std::string out, err;
  for (const char *p : {"tflm", "arenad"}) {
    std::string crashed;
    int first = -1;
    for (int bytes = from; bytes <= to; bytes += step) {
      int st = Exec({bin, "--planner", p, "--socket", dir + "/none.sock",
                     "--arena-bytes", std::to_string(bytes), ModelPath(model)},
                    dir, &out, &err);
      ck_assert_msg(st >= 0 && st < 128, "%s --planner %s --arena-bytes %d: "
                    "exit %d", model, p, bytes, st);
      ck_assert_msg(st != 70 || err.find("TFLite Micro crashed") !=
                    std::string::npos, "%s", err.c_str());
      counts[st]++;
      if (st == 70 && first < 0)
        first = bytes;
      if (first >= 0 && (st != 70 || bytes + step > to)) {
        AddRange(&crashed, first, st == 70 ? bytes : bytes - step);
        first = -1;
      }
    }
    printf("tflm infer: %s --planner %s, arenas of %d to %d bytes in steps "
           "of %d: TFLM crashed (exit 70) at %s\n", model, p, from, to, step,
           crashed.empty() ? "none" : crashed.c_str());
  }
  fflush(stdout);
}

START_TEST(test_infer_errors) {
  char *dir = tu_mkdtemp();
  std::string d = dir, out, err, bin = TFLM_TEST_BUILD "/examples/tflm_infer";
  std::string junk = d + "/junk.tflite";
  FILE *f = fopen(junk.c_str(), "w");
  fputs("this is not a model, not even close to one", f);
  fclose(f);
  struct {
    std::vector<std::string> args;
    int status;
    const char *says;
  } cases[] = {
      {{bin}, 64, "missing MODEL"},
      {{bin, "--invokes", "0", "m"}, 64, "bad option or value"},
      {{bin, "--planner", "other", "m"}, 64, "bad option or value"},
      {{bin, "a", "b"}, 64, "only one MODEL"},
      {{bin, d + "/missing.tflite"}, 66, "cannot open"},
      {{bin, junk}, 65, "not a valid TFLite model"},
      {{bin, ModelPath("audio_preprocessor_int8")}, 65,
       "operators SignalWindow, SignalFftAutoScale, "},
      {{bin, "--arena-bytes", "4096", ModelPath("person_detect")}, 65,
       "AllocateTensors failed"},
      {{bin, "--no-fallback", "--socket", d + "/none.sock",
        ModelPath("hello_world_float")},
       65, "daemon unreachable"},
      {{bin, "--answer-timeout", "0", "m"}, 64, "bad option or value"},
      {{bin, "--plan-timeout", "soon", "m"}, 64, "bad option or value"},
      {{bin, "--connect-timeout", "86400001", "m"}, 64,
       "bad option or value"},
      {{bin, "--connect-timeout"}, 64, "bad option or value"},
  };
  int st;
  for (auto &c : cases) {
    st = Exec(c.args, d, &out, &err);
    ck_assert_msg(st == c.status, "%s: exit %d, want %d: %s",
                  c.args.back().c_str(), st, c.status, err.c_str());
    ck_assert_msg(err.find(c.says) != std::string::npos, "stderr: %s",
                  err.c_str());
  }
  /* Arenas around the smallest that works: a clean 0 or 65, never a
   * crash or a hang, with either planner. (TFLM's GreedyMemoryPlanner
   * keeps its state in the arena's free space; asking it for the head
   * after AllocateTensors() once read overwritten memory there.) */
  int counts[128] = {0};
  Sweep(bin, d, "hello_world_float", 1024, 2304, 16, counts);
  ck_assert_int_gt(counts[0], 0);
  ck_assert_int_gt(counts[65], 0);
  ck_assert_int_eq(counts[0] + counts[65], 2 * 81);
  /* On dtln_noise_suppression TFLM itself crashes on many arenas that are
   * too small (it uses failed allocations unchecked), from the smallest
   * tflm_infer accepts on; tflm_infer runs the model in a child and
   * reports that as exit 70, never dying itself. */
  memset(counts, 0, sizeof counts);
  Sweep(bin, d, "dtln_noise_suppression", 1024, 6464, 64, counts);
  ck_assert_int_eq(counts[0] + counts[65] + counts[70], 2 * 86);
  ck_assert_int_gt(counts[70], 0);
  /* An arena too small for TFLM's own bookkeeping: AllocateTensors fails
   * before TFLM asks the planner for anything, and the plan line says so
   * rather than describing a plan that was never made. */
  for (const char *p : {"arenad", "tflm"}) {
    st = Exec({bin, "--planner", p, "--socket", d + "/none.sock",
               "--arena-bytes", "1024", ModelPath("hello_world_float")},
              d, &out, &err);
    ck_assert_int_eq(st, 65);
    ck_assert_msg(out.find("plan: none, AllocateTensors failed before "
                           "TFLite Micro asked the planner for one") !=
                      std::string::npos &&
                      out.find("plan: from") == std::string::npos &&
                      out.find("GreedyMemoryPlanner") == std::string::npos,
                  "--planner %s: %s", p, out.c_str());
  }
  /* A planning failure is a failure on the plan line too. */
  st = Exec({bin, "--no-fallback", "--socket", d + "/none.sock",
             ModelPath("hello_world_float")}, d, &out, &err);
  ck_assert_int_eq(st, 65);
  ck_assert_msg(out.find("plan: none, planning failed: daemon unreachable") !=
                std::string::npos, "%s", out.c_str());
  /* With fallback (the default) a missing daemon only changes the source. */
  st = Exec({bin, "--socket", d + "/none.sock", ModelPath("hello_world_float")},
               d, &out, &err);
  ck_assert_int_eq(st, 0);
  ck_assert_msg(out.find("plan: from local (arenad: ") != std::string::npos,
                "%s", out.c_str());
  st = Exec({bin, "--planner", "tflm", ModelPath("hello_world_float")}, d, &out,
           &err);
  ck_assert_int_eq(st, 0);
  ck_assert_msg(out.find("GreedyMemoryPlanner, head 128 bytes") !=
                std::string::npos, "%s", out.c_str());
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* A stopped arenad (SIGSTOP) costs tflm_infer, and so AllocateTensors,
 * the answer timeout (2 s by default), not the 30 s plan timeout: it
 * plans locally and runs. --answer-timeout reaches the client. A guard
 * resumes and kills the daemon should the test end while it is stopped. */
START_TEST(test_infer_stopped_daemon) {
  Daemon d;
  std::string out, err, bin = TFLM_TEST_BUILD "/examples/tflm_infer";
  std::string model = ModelPath("hello_world_float");
  ck_assert_int_eq(Exec({bin, "--socket", d.h.sock, model}, d.h.dir, &out,
                        &err), 0);
  ck_assert_msg(out.find("plan: from daemon,") != std::string::npos, "%s",
                out.c_str());
  struct tu_stop stop;
  ck_assert_int_eq(tu_stop_start(&stop, (int)d.h.pid, 120), 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = Exec({bin, "--socket", d.h.sock, model}, d.h.dir, &out, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  std::string out2, err2;
  int st2 = Exec({bin, "--socket", d.h.sock, "--answer-timeout", "700",
                  model}, d.h.dir, &out2, &err2);
  tu_stop_end(&stop);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
              (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  ck_assert_msg(st == 0, "exit %d: %s", st, err.c_str());
  ck_assert_msg(out.find("plan: from local (arenad: ") != std::string::npos &&
                    out.find("is not answering") != std::string::npos,
                "%s", out.c_str());
  printf("tflm infer: a stopped arenad, plan from local after %.0f ms\n", ms);
  fflush(stdout);
  ck_assert_msg(ms < 15000, "took %.0f ms, not well before the 30 s plan "
                "timeout", ms);
  ck_assert_msg(st2 == 0 && out2.find("for 700 ms (the answer timeout)") !=
                std::string::npos, "exit %d: %s", st2, out2.c_str());
}
END_TEST

/* --in-place (the default) and --no-in-place: trained_lstm declares one
 * pair; with sharing it is reported and the outputs are those without. */
START_TEST(test_infer_in_place) {
  char *dir = tu_mkdtemp();
  std::string d = dir, on, off, err, bin = TFLM_TEST_BUILD "/examples/tflm_infer";
  std::string sock = d + "/none.sock", model = ModelPath("trained_lstm");
  ck_assert_int_eq(Exec({bin, "--socket", sock, "--values", "0", model}, d,
                        &on, &err), 0);
  ck_assert_msg(on.find(", 1 pairs in place (lower bound ") !=
                std::string::npos, "%s", on.c_str());
  ck_assert_int_eq(Exec({bin, "--socket", sock, "--values", "0",
                         "--no-in-place", model}, d, &off, &err), 0);
  ck_assert_msg(off.find("in place") == std::string::npos, "%s", off.c_str());
  auto outputs = [](const std::string &s) {
    return s.substr(s.find("\noutput "));
  };
  std::string out_on = outputs(on), out_off = outputs(off);
  ck_assert_str_eq(out_on.c_str(), out_off.c_str());
  std::string again;
  ck_assert_int_eq(Exec({bin, "--socket", sock, "--values", "0", "--in-place",
                         model}, d, &again, &err), 0);
  ck_assert_str_eq(again.c_str(), on.c_str());
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* A model that needs several operators this build lacks: tflm_infer
 * names every one of them in one message, each once, and exits 65. The
 * names are the custom operator codes the model file holds (its string
 * table lists exactly these nine Signal* operators). */
START_TEST(test_infer_names_every_missing_op) {
  char *dir = tu_mkdtemp();
  std::string d = dir, out, err, bin = TFLM_TEST_BUILD "/examples/tflm_infer";
  int st = Exec({bin, ModelPath("audio_preprocessor_int8")}, d, &out, &err);
  ck_assert_int_eq(st, 65);
  const char *names[] = {
      "SignalWindow",     "SignalFftAutoScale",
      "SignalRfft",       "SignalEnergy",
      "SignalFilterBank", "SignalFilterBankSquareRoot",
      "SignalFilterBankSpectralSubtraction", "SignalPCAN",
      "SignalFilterBankLog"};
  size_t at = err.find("operators ");
  ck_assert_msg(at != std::string::npos, "%s", err.c_str());
  std::string msg = err.substr(at);
  ck_assert_msg(msg.find(" are not in this build of TFLite Micro") !=
                std::string::npos, "%s", msg.c_str());
  for (const char *n : names) {
    /* each name whole (followed by ", ", " and " or " are"), once */
    int found = 0;
    for (const char *end : {", ", " and ", " are"}) {
      std::string w = std::string(n) + end;
      size_t p = msg.find(w);
      if (p != std::string::npos && (msg[p - 1] == ' ')) {
        found++;
        ck_assert_msg(msg.find(w, p + 1) == std::string::npos, "%s twice",
                      n);
      }
    }
    ck_assert_msg(found == 1, "%s: named %d times in %s", n, found,
                  msg.c_str());
  }
  /* seven commas and one "and" for nine names */
  int commas = 0;
  for (char c : msg)
    commas += c == ',';
  ck_assert_int_eq(commas, 7);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* The lines of a tflm_infer run from its first output on. */
std::string OutputLines(const std::string &text) {
  size_t at = text.find("\noutput ");
  return at == std::string::npos ? std::string() : text.substr(at);
}

/* Stops d's daemon, poisons its database (tests/poison_db: every plan
 * replaced by the naive layout of its graph, stored as final), and
 * starts it again. */
void PoisonDaemon(Daemon *d) {
  ck_assert_int_eq(hn_stop(&d->h), 0);
  std::string out, err;
  int st = Exec({tu_bin("POISON_DB"), d->h.db}, d->h.dir, &out, &err);
  ck_assert_msg(st == 0, "poison_db: exit %d: %s", st, err.c_str());
  ck_assert_int_eq(hn_start(&d->h), 0);
}

/* A poisoned plan in arenad's cache (arenad_tflm.h, UNUSABLE PLANS), in
 * an arena that holds arenad's own plan (55296 bytes of head, 84944 in
 * all) but not the naive one: tflm_infer plans locally, runs with the
 * same outputs, says why on its plan line and in TFLM's log, and reports
 * the plan, which arenad replaces by its own, served from its cache to
 * the next process;
 * without fallback, the report alone gets arenad's new plan. The old
 * client served the poisoned plan to TFLM, which failed ("the plan needs
 * ... bytes"). */
START_TEST(test_infer_poisoned_plan) {
  Daemon d;
  std::string model = ModelPath("person_detect"), out, err;
  std::string bin = TFLM_TEST_BUILD "/examples/tflm_infer";
  std::vector<std::string> run = {bin, "--socket", d.h.sock, "--invokes",
                                  "2", "--arena-bytes", "90112", model};
  int st = Exec(run, d.h.dir, &out, &err);
  ck_assert_msg(st == 0, "%s%s", out.c_str(), err.c_str());
  ck_assert_msg(out.find("plan: from daemon,") != std::string::npos, "%s",
                out.c_str());
  std::string expect = OutputLines(out);
  ck_assert(!expect.empty());
  PoisonDaemon(&d);
  st = Exec(run, d.h.dir, &out, &err);
  ck_assert_msg(st == 0, "%s%s", out.c_str(), err.c_str());
  std::string all = out + err;
  ck_assert_msg(out.find("plan: from local (arenad: planned locally (") !=
                    std::string::npos, "%s", out.c_str());
  ck_assert_msg(all.find("this caller can use") != std::string::npos, "%s",
                all.c_str());
  ck_assert_msg(all.find("reported to the daemon, which replaced it") !=
                    std::string::npos, "%s", all.c_str());
  ck_assert_msg(all.find("arenad planner: planned locally (") !=
                    std::string::npos, "no log line in %s", all.c_str());
  ck_assert(OutputLines(out) == expect);
  ck_assert_int_eq(hn_log_count(&d.h, "replaced a stored plan a client "
                                      "reported unusable"), 1);
  st = Exec(run, d.h.dir, &out, &err);
  ck_assert_msg(st == 0, "%s%s", out.c_str(), err.c_str());
  ck_assert_msg(out.find("plan: from cache,") != std::string::npos, "%s",
                out.c_str());
  ck_assert(OutputLines(out) == expect);
  /* Without fallback. */
  PoisonDaemon(&d);
  std::vector<std::string> strict = run;
  strict.insert(strict.begin() + 1, "--no-fallback");
  st = Exec(strict, d.h.dir, &out, &err);
  ck_assert_msg(st == 0, "%s%s", out.c_str(), err.c_str());
  ck_assert_msg(out.find("plan: from cache,") != std::string::npos, "%s",
                out.c_str());
  ck_assert(OutputLines(out) == expect);
  ck_assert_int_eq(hn_log_count(&d.h, "replaced a stored plan a client "
                                      "reported unusable"), 2);
}
END_TEST

}  // namespace


void check_tflm::AddInferTests(Suite *s) {
  TCase *tc = tcase_create("infer");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_infer_eight_processes);
  tcase_add_test(tc, test_infer_errors);
  tcase_add_test(tc, test_infer_names_every_missing_op);
  tcase_add_test(tc, test_infer_in_place);
  tcase_add_test(tc, test_infer_stopped_daemon);
  tcase_add_test(tc, test_infer_poisoned_plan);
  suite_add_tcase(s, tc);
}
