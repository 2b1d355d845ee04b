// Writes the inet stack fuzz seeds (fuzz_stack_seeds.cc) into a directory, one file per seed:
//   inet_fuzz_seeds tests/unit/inet/fuzz_corpus
// Run it after changing the harness's operand order, and commit the result.
#include "tests/support/fuzz_driver.h"
#include "tests/unit/inet/fuzz_stack.h"

int main(int argc, char** argv) {
  return bypass::testing::fuzz_write_seeds_main(argc, argv, bypass::inet::fuzz::make_seeds());
}
