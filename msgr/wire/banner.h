// The msgr2 banner both peers send right after the TCP connection is up:
//   "ceph v2\n" | __le16 payload length | payload: __le64 supported features, __le64 required features
// (Ceph doc/dev/msgr2.rst, "Banner exchange"). The features are msgr2's own namespace:
// bit 0 REVISION_1 (msgr2.1 frame layout), bit 1 COMPRESSION.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/buffer_list.h"

namespace bypass::msgr::wire {

constexpr std::string_view kBannerPrefix = "ceph v2\n";
constexpr size_t kBannerPrefixSize = 8 + 2;  // text + __le16 payload length
constexpr uint16_t kBannerMaxPayload = 4096;

constexpr uint64_t kMsgr2FeatureRevision1 = 1ull << 0;
constexpr uint64_t kMsgr2FeatureCompression = 1ull << 1;
// What this implementation speaks: rev 2.1, no on-wire compression.
constexpr uint64_t kMsgr2SupportedFeatures = kMsgr2FeatureRevision1;
constexpr uint64_t kMsgr2RequiredFeatures = kMsgr2FeatureRevision1;

struct Banner {
  uint64_t supported = kMsgr2SupportedFeatures;
  uint64_t required = kMsgr2RequiredFeatures;

  void encode(BufferList& out) const;
};

class BannerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Incremental banner parser: returns true once the whole banner was consumed from `input`.
// Throws BannerError on a wrong prefix or an implausible payload length.
class BannerReader {
 public:
  bool read(BufferList& input, Banner* out);

 private:
  bool have_prefix_ = false;
  uint16_t payload_len_ = 0;
};

// Checks the peer's banner against ours; returns an empty string when compatible, else why not.
std::string check_banner_features(const Banner& ours, const Banner& peer);

}  // namespace bypass::msgr::wire
