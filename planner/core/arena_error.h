/*
 * arena_error.h - the one error enum shared by every arenad module.
 *
 * Every fallible call in arenad returns int: 0 on success or one of the
 * negative ARENA_E* codes below. The table is an X-macro so that the enum,
 * arena_strerror() and arena_err_name() can never drift apart. Codes are
 * stable: new ones go at the end, old ones are never renumbered.
 */
#ifndef ARENA_ERROR_H
#define ARENA_ERROR_H

#define ARENA_ERRNO_MAP(XX)                                                  \
  XX(EINVAL, -1, "invalid argument")                                         \
  XX(ENOMEM, -2, "out of memory")                                            \
  XX(EOVERFLOW, -3, "value too large or arithmetic overflow")                \
  XX(ELIFETIME, -4, "lifetime ends before it starts")                        \
  XX(EDUPID, -5, "duplicate tensor id")                                      \
  XX(EALIGN, -6, "alignment is not a power of two")                          \
  XX(EEMPTY, -7, "graph has no tensors")                                     \
  XX(EVERIFY, -8, "plan failed verification")                                \
  XX(ECANCELED, -9, "operation cancelled")                                   \
  XX(ETIMEDOUT, -10, "timed out")                                            \
  XX(EINFEASIBLE, -11, "no plan fits the capacity")                          \
  XX(EPARSE, -12, "malformed input")                                         \
  XX(ENOENT, -13, "no such file or entry")                                   \
  XX(EIO, -14, "input/output error")                                         \
  XX(ECORRUPT, -15, "stored data is corrupt")                                \
  XX(EBUSY, -16, "resource busy")                                            \
  XX(EPROTO, -17, "protocol error")                                          \
  XX(ETOOBIG, -18, "request exceeds a limit")                                \
  XX(EDENIED, -19, "permission denied")                                      \
  XX(EUNAVAIL, -20, "service unavailable")                                   \
  XX(EVERSION, -21, "unsupported version")                                   \
  XX(EPINNED, -22, "pinned tensors conflict")                                \
  XX(EUNSUPPORTED, -23, "unsupported input")                                 \
  XX(EINTERNAL, -24, "internal error")                                       \
  XX(EUNUSABLE, -25, "plan not usable by the caller")

enum arena_err {
  ARENA_OK = 0,
#define ARENA_ERR_ENUM_(name, val, msg) ARENA_##name = (val),
  ARENA_ERRNO_MAP(ARENA_ERR_ENUM_)
#undef ARENA_ERR_ENUM_
};

#ifdef __cplusplus
extern "C" {
#endif

/* Returns a static, human-readable description of code (0 or ARENA_E*).
 * Unknown codes give "unknown error". Never returns NULL. */
const char *arena_strerror(int code);

/* Returns the static symbolic name of code, e.g. "ARENA_EINVAL". */
const char *arena_err_name(int code);

#ifdef __cplusplus
}
#endif

/* Length of the optional error-text buffers that one-shot calls fill. */
#define ARENA_ERR_LEN 256

#endif /* ARENA_ERROR_H */
