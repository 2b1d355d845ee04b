// Writes the msgr wire fuzz seeds (fuzz_seeds.h) into a directory, one file per seed:
//   msgr_fuzz_seeds tests/unit/msgr/fuzz_corpus
// Run it after changing the handshake or the frame format, and commit the result.
#include "tests/support/fuzz_driver.h"
#include "tests/unit/msgr/fuzz_seeds.h"

int main(int argc, char** argv) {
  bypass::log::set_threshold(bypass::log::Level::Error);
  return bypass::testing::fuzz_write_seeds_main(argc, argv, bypass::msgr::fuzz::make_seeds());
}
