// Writes the msgr wire fuzz seeds (fuzz_seeds.h) into a directory, one file per seed:
//   msgr_fuzz_seeds tests/unit/msgr/fuzz_corpus
// Run it after changing the handshake or the frame format, and commit the result.
#include <cstdio>
#include <fstream>

#include "base/log.h"
#include "tests/unit/msgr/fuzz_seeds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  bypass::log::set_threshold(bypass::log::Level::Error);
  for (const auto& seed : bypass::msgr::fuzz::make_seeds()) {
    std::string path = std::string(argv[1]) + "/" + seed.name;
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(seed.bytes.data(), static_cast<std::streamsize>(seed.bytes.size()));
    if (!file) {
      std::fprintf(stderr, "msgr_fuzz_seeds: cannot write %s\n", path.c_str());
      return 1;
    }
    std::printf("%-48s %zu bytes\n", seed.name.c_str(), seed.bytes.size());
  }
  return 0;
}
