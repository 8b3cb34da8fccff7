/*
 * gen_models_write.cc - writes the generated models of gen_models.h that
 * tests/data/generated/ holds (FileModels()), so that programs can be
 * run on them: `tflite_infer`, `arenactl plan`, `make tflite-check`.
 * check_tflite_rt checks that the files there are these bytes.
 *
 * Usage: gen_models_write DIR
 * Exit status: 0 written; 64 bad command line; 73 a file could not be
 * written.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <string>

#include "gen_models.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_models_write DIR\n");
    return 64;
  }
  for (const gen_models::FileModel &m : gen_models::FileModels()) {
    std::string path = std::string(argv[1]) + "/" + m.file;
    FILE *f = fopen(path.c_str(), "wb");
    bool ok = f && fwrite(m.bytes.data(), 1, m.bytes.size(), f) ==
                       m.bytes.size();
    if (f && fclose(f) != 0)
      ok = false;
    if (!ok) {
      fprintf(stderr, "gen_models_write: %s: %s\n", path.c_str(),
              strerror(errno));
      return 73;
    }
    printf("%s: %zu bytes\n", path.c_str(), m.bytes.size());
  }
  return 0;
}
