// Sequence-number arithmetic modulo 2^32 (RFC 9293 §3.4): comparisons are valid for values less
// than 2^31 apart, which the window sizes guarantee.
#pragma once

#include <cstdint>

namespace bypass::inet {

inline bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool seq_leq(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
inline bool seq_gt(uint32_t a, uint32_t b) { return seq_lt(b, a); }
inline bool seq_geq(uint32_t a, uint32_t b) { return seq_leq(b, a); }
inline uint32_t seq_max(uint32_t a, uint32_t b) { return seq_lt(a, b) ? b : a; }
inline uint32_t seq_min(uint32_t a, uint32_t b) { return seq_lt(a, b) ? a : b; }
// a <= x < b
inline bool seq_in(uint32_t x, uint32_t a, uint32_t b) { return seq_leq(a, x) && seq_lt(x, b); }

}  // namespace bypass::inet
