// A TCP sequence number: a point in a space of 2^32 that wraps (RFC 9293 §3.4). Adding a length
// moves it, subtracting two gives the distance between them, and comparisons follow RFC 1982's
// serial-number arithmetic: a < b when b lies less than 2^31 ahead of a, which the window sizes
// guarantee for any two numbers compared. It is a uint32_t at run time (constexpr, inlined);
// the type keeps a sequence number from being compared as a plain integer, which is wrong where
// the space wraps. Built implicitly from its 32-bit value (the wire field, a test's literal);
// raw() gives that value back.
#pragma once

#include <cstdint>

namespace bypass::inet {

class SeqNumber {
 public:
  constexpr SeqNumber() = default;
  constexpr SeqNumber(uint32_t raw) : raw_(raw) {}  // NOLINT(google-explicit-constructor)
  constexpr uint32_t raw() const { return raw_; }

  constexpr SeqNumber& operator+=(uint32_t length) {
    raw_ += length;
    return *this;
  }
  constexpr SeqNumber& operator-=(uint32_t length) {
    raw_ -= length;
    return *this;
  }
  friend constexpr SeqNumber operator+(SeqNumber s, uint32_t length) { return s += length; }
  friend constexpr SeqNumber operator-(SeqNumber s, uint32_t length) { return s -= length; }
  // The octets from `from` up to `to` (modulo 2^32).
  friend constexpr uint32_t operator-(SeqNumber to, SeqNumber from) { return to.raw_ - from.raw_; }

  friend constexpr bool operator==(SeqNumber a, SeqNumber b) { return a.raw_ == b.raw_; }
  friend constexpr bool operator<(SeqNumber a, SeqNumber b) { return static_cast<int32_t>(a.raw_ - b.raw_) < 0; }
  friend constexpr bool operator<=(SeqNumber a, SeqNumber b) { return static_cast<int32_t>(a.raw_ - b.raw_) <= 0; }
  friend constexpr bool operator>(SeqNumber a, SeqNumber b) { return b < a; }
  friend constexpr bool operator>=(SeqNumber a, SeqNumber b) { return b <= a; }

 private:
  uint32_t raw_ = 0;
};
static_assert(sizeof(SeqNumber) == 4);
static_assert(SeqNumber(0xffffffffu) < SeqNumber(0) && SeqNumber(0) - SeqNumber(0xffffffffu) == 1,
              "comparisons and distances wrap");

// The later / earlier of two sequence numbers.
constexpr SeqNumber seq_max(SeqNumber a, SeqNumber b) { return a < b ? b : a; }
constexpr SeqNumber seq_min(SeqNumber a, SeqNumber b) { return a < b ? a : b; }
// first <= x < end
constexpr bool seq_in(SeqNumber x, SeqNumber first, SeqNumber end) { return first <= x && x < end; }

// RFC 7323 §5.2: timestamps compare with the same modular arithmetic (TSval a is older than b).
constexpr bool timestamp_before(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

}  // namespace bypass::inet
