#include "msgr/wire/banner.h"

#include <cstdio>

#include "msgr/wire/codec.h"

namespace bypass::msgr::wire {

void Banner::encode(BufferList& out) const {
  Encoder enc(out);
  enc.raw(kBannerPrefix);
  enc.u16(16);
  enc.u64(supported);
  enc.u64(required);
}

bool BannerReader::read(BufferList& input, Banner* out) {
  if (!have_prefix_) {
    if (input.length() < kBannerPrefixSize) {
      // Reject garbage early: whatever has arrived must already match the text.
      size_t n = std::min(input.length(), kBannerPrefix.size());
      std::string head(n, '\0');
      input.copy_out(0, n, head.data());
      if (head != kBannerPrefix.substr(0, n)) throw BannerError("peer did not send a msgr2 banner");
      return false;
    }
    char prefix[kBannerPrefixSize];
    input.copy_out(0, kBannerPrefixSize, prefix);
    if (std::string_view(prefix, kBannerPrefix.size()) != kBannerPrefix)
      throw BannerError("peer did not send a msgr2 banner (it may speak msgr v1)");
    payload_len_ = static_cast<uint16_t>(static_cast<uint8_t>(prefix[8]) | (static_cast<uint8_t>(prefix[9]) << 8));
    if (payload_len_ < 16 || payload_len_ > kBannerMaxPayload)
      throw BannerError("banner payload length " + std::to_string(payload_len_) + " is not in [16, " +
                        std::to_string(kBannerMaxPayload) + "]");
    input.trim_front(kBannerPrefixSize);
    have_prefix_ = true;
  }
  if (input.length() < payload_len_) return false;
  std::string payload(payload_len_, '\0');
  input.copy_out(0, payload_len_, payload.data());
  input.trim_front(payload_len_);
  Decoder dec(payload, "banner");
  out->supported = dec.u64("supported_features");
  out->required = dec.u64("required_features");
  return true;
}

std::string check_banner_features(const Banner& ours, const Banner& peer) {
  uint64_t missing_ours = peer.required & ~ours.supported;
  if (missing_ours) {
    char text[96];
    std::snprintf(text, sizeof(text), "peer requires msgr2 features 0x%llx that we lack",
                  static_cast<unsigned long long>(missing_ours));
    return text;
  }
  uint64_t missing_peer = ours.required & ~peer.supported;
  if (missing_peer) {
    char text[96];
    std::snprintf(text, sizeof(text), "peer lacks required msgr2 features 0x%llx",
                  static_cast<unsigned long long>(missing_peer));
    return text;
  }
  return {};
}

}  // namespace bypass::msgr::wire
