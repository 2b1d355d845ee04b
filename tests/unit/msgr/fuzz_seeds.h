// Valid inputs for the msgr wire fuzz entry, produced by our own encoder and handshake: frame
// streams (crc and secure) and, for each handshake target and variant, the bytes a real peer sends.
// The libFuzzer test starts from these (committed under fuzz_corpus/, regenerated with
// msgr_fuzz_seeds); the replay driver mutates them directly.
#pragma once

#include <vector>

#include "tests/support/fuzz_driver.h"

namespace bypass::msgr::fuzz {

using Seed = testing::FuzzSeed;  // bytes: selector byte + peer bytes

std::vector<Seed> make_seeds();

}  // namespace bypass::msgr::fuzz
