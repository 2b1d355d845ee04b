// The inet stack fuzz harness (fuzz_stack.cc): one input drives one live InetStack. Built into the
// libFuzzer target (-Dfuzz=true) and into inet_fuzz_replay, which replays the committed corpus and
// seeded mutations under any compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/support/fuzz_driver.h"

namespace bypass::inet::fuzz {

void run_stack(const uint8_t* data, size_t size);

// Inputs that reach the deep states (handshakes both ways, data, loss, close): the seed corpus.
std::vector<testing::FuzzSeed> make_seeds();

}  // namespace bypass::inet::fuzz
