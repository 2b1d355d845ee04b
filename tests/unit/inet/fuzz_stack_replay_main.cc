// The inet stack fuzz target without libFuzzer: the committed corpus, then seeded mutations of the
// generated seeds (tests/support/fuzz_driver.h).
//   inet_fuzz_replay ITERATIONS SECONDS CORPUS_DIR
#include "tests/support/fuzz_driver.h"
#include "tests/unit/inet/fuzz_stack.h"

int main(int argc, char** argv) {
  return bypass::testing::fuzz_replay_main(argc, argv, bypass::inet::fuzz::make_seeds());
}
