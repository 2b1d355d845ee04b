// The msgr wire fuzz target without libFuzzer: the committed corpus, then seeded mutations of the
// generated seeds (tests/support/fuzz_driver.h).
//   msgr_fuzz_replay ITERATIONS SECONDS CORPUS_DIR
#include "tests/support/fuzz_driver.h"
#include "tests/unit/msgr/fuzz_seeds.h"

int main(int argc, char** argv) {
  return bypass::testing::fuzz_replay_main(argc, argv, bypass::msgr::fuzz::make_seeds());
}
