// What every fuzz target's two small programs share, without libFuzzer (any compiler):
//  - the replay driver: every file of the committed corpus (seeds and crash regressions) through
//    LLVMFuzzerTestOneInput, then seeded random mutations of the generated seeds for a bounded count
//    and time; any crash, hang or sanitizer report fails the test that runs it;
//  - the seed writer: the generated seeds into a corpus directory, one file each.
// Header-only so every test directory can include it; the program defines LLVMFuzzerTestOneInput.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace bypass::testing {

struct FuzzSeed {
  std::string name;   // file name in the corpus
  std::string bytes;  // the input
};

inline void run_fuzz_input(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

//   PROGRAM ITERATIONS SECONDS CORPUS_DIR
inline int fuzz_replay_main(int argc, char** argv, const std::vector<FuzzSeed>& generated) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ITERATIONS SECONDS CORPUS_DIR\n", argv[0]);
    return 2;
  }
  bypass::log::set_threshold(bypass::log::Level::Error);  // mutated inputs log every failure
  const long iterations = std::atol(argv[1]);
  const auto limit = std::chrono::seconds(std::atol(argv[2]));

  long corpus_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(argv[3])) {
    std::ifstream file(entry.path(), std::ios::binary);
    run_fuzz_input(std::string(std::istreambuf_iterator<char>(file), {}));
    ++corpus_files;
  }
  if (corpus_files == 0) {
    std::fprintf(stderr, "%s: no corpus files in %s\n", argv[0], argv[3]);
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20261122);
  long done = 0;
  for (; done < iterations && std::chrono::steady_clock::now() - start < limit; ++done) {
    std::string input = generated[rng() % generated.size()].bytes;
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
    run_fuzz_input(input);
  }
  std::printf("fuzz replay: %ld corpus files and %ld mutated inputs, no crash\n", corpus_files, done);
  return 0;
}

//   PROGRAM CORPUS_DIR
inline int fuzz_write_seeds_main(int argc, char** argv, const std::vector<FuzzSeed>& seeds) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  for (const auto& seed : seeds) {
    std::string path = std::string(argv[1]) + "/" + seed.name;
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(seed.bytes.data(), static_cast<std::streamsize>(seed.bytes.size()));
    if (!file) {
      std::fprintf(stderr, "%s: cannot write %s\n", argv[0], path.c_str());
      return 1;
    }
    std::printf("%-48s %zu bytes\n", seed.name.c_str(), seed.bytes.size());
  }
  return 0;
}

}  // namespace bypass::testing
