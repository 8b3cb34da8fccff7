/*
 * arena_error.c - strerror and names for the project-wide error table.
 */
#include "arena_error.h"

const char *arena_strerror(int code)
{
  switch (code) {
  case ARENA_OK:
    return "success";
#define ARENA_ERR_STR_(name, val, msg) \
  case ARENA_##name:                   \
    return msg;
    ARENA_ERRNO_MAP(ARENA_ERR_STR_)
#undef ARENA_ERR_STR_
  default:
    return "unknown error";
  }
}

const char *arena_err_name(int code)
{
  switch (code) {
  case ARENA_OK:
    return "ARENA_OK";
#define ARENA_ERR_NAME_(name, val, msg) \
  case ARENA_##name:                    \
    return "ARENA_" #name;
    ARENA_ERRNO_MAP(ARENA_ERR_NAME_)
#undef ARENA_ERR_NAME_
  default:
    return "ARENA_EUNKNOWN";
  }
}
