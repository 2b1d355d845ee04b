// Internet checksum (RFC 1071): one's-complement sum of 16-bit big-endian words.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/buffer_list.h"
#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

// Running one's-complement accumulator. Byte ranges may be added in pieces of any length (odd
// lengths carry the dangling byte into the next piece), so a BufferList of arbitrary segments sums
// the same as one flat buffer.
class ChecksumAccumulator {
 public:
  void add(const void* data, size_t len);
  // Copies `len` bytes from `src` to `dst` (which must not overlap) and adds them: where the bytes
  // are copied anyway (into an mbuf), the sum costs no second pass over them.
  void add_copy(void* dst, const void* src, size_t len);
  void add(const BufferList& list, size_t offset, size_t len);
  void add_u16(uint16_t host_order_value);
  void add_u32(uint32_t host_order_value);
  // The folded 16-bit sum (not inverted): what offloading NICs expect in the field.
  uint16_t folded() const;
  // The value to store in a checksum field (inverted fold). A verifying sum over data that
  // includes a correct checksum field gives finish() == 0.
  uint16_t finish() const { return static_cast<uint16_t>(~folded()); }

 private:
  void add_bytes(const uint8_t* src, size_t len, uint8_t* dst);

  uint64_t sum_ = 0;
  bool odd_ = false;  // the previous piece ended in the middle of a 16-bit word
};

uint16_t internet_checksum(const void* data, size_t len);

// The IPv6 pseudo-header (RFC 8200 §8.1) that every upper-layer checksum over IPv6 covers (TCP,
// UDP, and ICMPv6 too, unlike ICMPv4: RFC 4443 §2.3): source, destination, the upper-layer packet
// length as 32 bits, three zero octets and the Next Header value of the upper layer (not of the
// first extension header). `destination` is the final one: with a Routing header, its last address.
void add_ipv6_pseudo_header(ChecksumAccumulator& sum, const Ipv6Address& source,
                            const Ipv6Address& destination, uint32_t upper_length, uint8_t next_header);
// Its folded sum (not inverted), the form offloading NICs expect in the checksum field.
uint16_t ipv6_pseudo_header_sum(const Ipv6Address& source, const Ipv6Address& destination,
                                uint32_t upper_length, uint8_t next_header);

namespace detail {

// The bulk loops behind ChecksumAccumulator, exposed so tests can hold each against a plain
// reference whatever the machine picks. A kernel sums the 16-bit words of `len` bytes (`len` a
// multiple of its block) in the machine's byte order and folds the result to 16 bits; when `copy_to`
// is not null it also copies the bytes there.
using ChecksumKernel = uint16_t (*)(const uint8_t* data, size_t len, uint8_t* copy_to);
struct ChecksumKernelInfo {
  const char* name;
  ChecksumKernel kernel;
  size_t block;      // bytes per loop step: `len` must be a multiple of it
  bool supported;    // this CPU can run it
};
// Every kernel built in, widest last; ChecksumAccumulator uses the widest supported one.
const ChecksumKernelInfo* checksum_kernels(size_t* count);

}  // namespace detail

}  // namespace bypass::inet
