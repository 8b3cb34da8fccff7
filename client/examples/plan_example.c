/*
 * plan_example.c - how an interpreter uses libarenad-client.
 *
 * An interpreter knows, after preparing a model, the size and lifetime of
 * every intermediate tensor. It asks arenad for offsets in one arena, then
 * places each tensor at arena + offset. If the daemon is not running the
 * library plans in-process instead, so this program works either way.
 *
 * Usage: plan_example [SOCKET]   (default: $ARENAD_SOCKET or
 *                                 /run/arenad/arenad.sock)
 * Exit status: 0 planned, 1 planning failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arenad/arenad_client.h>

int main(int argc, char **argv)
{
  /* 1. The lifetime graph: a toy four-operator network. Tensor k lives
   *    from operator `first` to operator `last`, inclusive. */
  static const struct planner_tensor tensors[] = {
      /* id  size   first last align pinned */
      {0, 150528, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0}, /* input image */
      {1, 401408, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0}, /* conv1 output */
      {2, 200704, 2, 3, 0, PLANNER_NOT_PINNED, 0, 0}, /* conv2 output */
      {3, 4000, 3, 4, 0, PLANNER_NOT_PINNED, 0, 0},   /* logits */
  };
  struct planner_graph g = {tensors, sizeof tensors / sizeof tensors[0]};

  /* 2. Planning options: the defaults (best algorithm, 64-byte offsets). */
  struct planner_options o;
  arenad_client_plan_options_init(&o);

  /* 3. The cache key: a hash of the model file and the input shapes. A
   *    real interpreter hashes its model bytes; this one hashes a name. */
  static const char model[] = "example-model-v1";
  uint8_t hash[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(model, strlen(model), hash);
  static const int64_t dims[] = {1, 224, 224, 3};
  struct arenad_dims input = {dims, 4};
  struct arenad_model_key key = {hash, sizeof hash, &input, 1};

  /* 4. One handle per thread; fallback on so a missing daemon is fine. */
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = argc > 1 ? argv[1] : NULL;
  co.fallback = 1;
  arenad_client_t *c;
  int rc = arenad_client_open(&co, &c);
  if (rc) {
    fprintf(stderr, "plan_example: %s\n", arenad_client_strerror(rc));
    return 1;
  }

  struct arenad_client_result r;
  arenad_client_result_init(&r);
  rc = arenad_client_plan(c, &g, &o, &key, &r);
  if (rc) {
    fprintf(stderr, "plan_example: %s: %s\n", arenad_client_err_name(rc),
            arenad_client_errmsg(c));
    arenad_client_close(c);
    return 1;
  }

  /* 5. Use the offsets: one allocation, every tensor inside it. */
  printf("source: %s\n", r.local ? "planned locally" : r.cached
                                                           ? "daemon cache"
                                                           : "daemon");
  if (r.local)
    printf("why local: %s\n", arenad_client_errmsg(c));
  printf("graph digest: ");
  for (size_t i = 0; i < sizeof r.graph_digest; i++)
    printf("%02x", r.graph_digest[i]);
  printf("\n");
  printf("arena: %llu bytes (naive %llu)\n",
         (unsigned long long)r.plan.arena_bytes,
         (unsigned long long)r.plan.naive_bytes);
  unsigned char *arena = malloc(r.plan.arena_bytes ? r.plan.arena_bytes : 1);
  if (!arena) {
    arenad_client_result_cleanup(&r);
    arenad_client_close(c);
    return 1;
  }
  for (size_t i = 0; i < g.n_tensors; i++) {
    unsigned char *t = arena + r.plan.offsets[i];
    memset(t, 0, tensors[i].size); /* the interpreter's buffer for tensor i */
    printf("tensor %u at offset %llu\n", (unsigned)tensors[i].id,
           (unsigned long long)r.plan.offsets[i]);
  }
  free(arena);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  return 0;
}
