// Without libFuzzer (any compiler): runs every file of the committed corpus (seeds and crash
// regressions) through LLVMFuzzerTestOneInput, then seeded random mutations of the generated seeds
// for a bounded count and time. Any crash, hang or sanitizer report fails the test.
//   msgr_fuzz_replay ITERATIONS SECONDS CORPUS_DIR
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/log.h"
#include "tests/unit/msgr/fuzz_seeds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ITERATIONS SECONDS CORPUS_DIR\n", argv[0]);
    return 2;
  }
  bypass::log::set_threshold(bypass::log::Level::Error);  // mutated handshakes log every failure
  const long iterations = std::atol(argv[1]);
  const auto limit = std::chrono::seconds(std::atol(argv[2]));

  long corpus_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(argv[3])) {
    std::ifstream file(entry.path(), std::ios::binary);
    run(std::string(std::istreambuf_iterator<char>(file), {}));
    ++corpus_files;
  }
  if (corpus_files == 0) {
    std::fprintf(stderr, "msgr_fuzz_replay: no corpus files in %s\n", argv[3]);
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20261122);
  std::vector<std::string> seeds;
  for (auto& seed : bypass::msgr::fuzz::make_seeds()) seeds.push_back(std::move(seed.bytes));
  long done = 0;
  for (; done < iterations && std::chrono::steady_clock::now() - start < limit; ++done) {
    std::string input = seeds[rng() % seeds.size()];
    int mutations = 1 + static_cast<int>(rng() % 8);
    for (int m = 0; m < mutations && input.size() > 1; ++m) {
      size_t pos = 1 + rng() % (input.size() - 1);
      switch (rng() % 4) {
        case 0: input[pos] = static_cast<char>(input[pos] ^ (1 << (rng() % 8))); break;
        case 1: input[pos] = static_cast<char>(rng()); break;
        case 2: input.resize(pos); break;
        case 3: input.insert(pos, std::string(1 + rng() % 8, static_cast<char>(rng()))); break;
      }
    }
    run(input);
  }
  std::printf("fuzz replay: %ld corpus files and %ld mutated inputs, no crash\n", corpus_files, done);
  return 0;
}
