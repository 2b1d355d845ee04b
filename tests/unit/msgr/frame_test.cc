// Frame assembly and parsing in crc and secure mode: round trips, exact sizes, corruption,
// limits and arbitrary input.
#include <gtest/gtest.h>

#include <random>

#include "msgr/wire/frame.h"

namespace bypass::msgr::wire {
namespace {

BufferList bytes_of(size_t len, uint8_t seed) {
  BufferList bl;
  char* p = bl.append_hole(len);
  for (size_t i = 0; i < len; ++i) p[i] = static_cast<char>(seed + i * 7);
  return bl;
}

struct Pair {
  FrameAssembler tx;
  FrameReader rx;
  explicit Pair(bool secure, FrameLimits limits = {}) : rx(limits) {
    if (secure) {
      AesKey key{};
      AesNonce nonce{};
      for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 3 + 1);
      for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(0xf0 + i);
      tx.set_cipher(std::make_unique<AesGcmStream>(key, nonce, true));
      rx.set_cipher(std::make_unique<AesGcmStream>(key, nonce, false));
    }
  }
};

size_t expected_crc_size(const std::array<size_t, 4>& lens, size_t count) {
  size_t size = kPreambleSize + (lens[0] ? lens[0] + 4 : 0);
  if (count > 1) {
    for (size_t i = 1; i < count; ++i) size += lens[i];
    size += kCrcEpilogueSize;
  }
  return size;
}

size_t expected_secure_size(const std::array<size_t, 4>& lens, size_t count) {
  size_t size = 96;
  uint32_t p0 = pad_to_block(static_cast<uint32_t>(lens[0]));
  if (p0 > 48) size += p0 - 48 + 16;
  if (count > 1) {
    for (size_t i = 1; i < count; ++i) size += pad_to_block(static_cast<uint32_t>(lens[i]));
    size += 32;
  }
  return size;
}

class FrameModes : public ::testing::TestWithParam<bool> {};

TEST_P(FrameModes, RoundTripSegmentShapes) {
  const bool secure = GetParam();
  Pair pair(secure);
  const std::vector<std::array<size_t, 4>> shapes = {
      {0, 0, 0, 0}, {1, 0, 0, 0}, {41, 0, 0, 0}, {47, 0, 0, 0}, {48, 0, 0, 0}, {49, 0, 0, 0},
      {64, 0, 0, 0}, {1000, 0, 0, 0}, {41, 1, 0, 0}, {41, 0, 0, 5}, {41, 100, 3, 4096},
      {0, 0, 0, 9}, {41, 65536, 17, 1 << 20},
  };
  uint16_t aligns[4] = {8, 8, 8, 4096};
  uint8_t seed = 1;
  for (const auto& lens : shapes) {
    std::array<BufferList, 4> segs;
    for (size_t i = 0; i < 4; ++i) segs[i] = bytes_of(lens[i], seed++);
    size_t count = 4;
    while (count > 1 && lens[count - 1] == 0) --count;
    BufferList wire;
    pair.tx.assemble(Tag::Message, segs, aligns, wire);
    EXPECT_EQ(wire.length(), secure ? expected_secure_size(lens, count) : expected_crc_size(lens, count))
        << lens[0] << "," << lens[1] << "," << lens[2] << "," << lens[3];
    // Feed in awkward pieces to exercise partial reads.
    BufferList input;
    Frame frame;
    bool done = false;
    size_t step = 1;
    while (!wire.empty()) {
      size_t n = std::min(wire.length(), step);
      wire.splice_front(n, input);
      step = step * 3 + 1;
      ASSERT_FALSE(done);
      done = pair.rx.read(input, &frame);
    }
    ASSERT_TRUE(done);
    EXPECT_TRUE(input.empty());
    EXPECT_EQ(frame.tag, Tag::Message);
    EXPECT_EQ(frame.num_segments, count);
    EXPECT_FALSE(frame.aborted);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(frame.segments[i].contents_equal(segs[i])) << "segment " << i;
      if (i < count) {
        EXPECT_EQ(frame.alignments[i], aligns[i]);
      }
    }
  }
}

TEST_P(FrameModes, BackToBackFramesInOneBuffer) {
  Pair pair(GetParam());
  BufferList wire;
  for (uint8_t t = kFirstTag; t <= kLastTag; ++t) {
    BufferList payload = bytes_of(t * 5, t);
    pair.tx.assemble_control(static_cast<Tag>(t), payload, wire);
  }
  for (uint8_t t = kFirstTag; t <= kLastTag; ++t) {
    Frame frame;
    ASSERT_TRUE(pair.rx.read(wire, &frame));
    EXPECT_EQ(static_cast<uint8_t>(frame.tag), t);
    EXPECT_TRUE(frame.segments[0].contents_equal(bytes_of(t * 5, t)));
  }
  Frame frame;
  EXPECT_FALSE(pair.rx.read(wire, &frame));
}

TEST_P(FrameModes, EveryFlippedBitIsDetected) {
  const bool secure = GetParam();
  std::array<BufferList, 4> segs = {bytes_of(41, 1), bytes_of(60, 2), bytes_of(3, 3), bytes_of(70, 4)};
  uint16_t aligns[4] = {8, 8, 8, 4096};
  std::string original;
  {
    Pair pair(secure);
    BufferList wire;
    pair.tx.assemble(Tag::Message, segs, aligns, wire);
    original = wire.to_string();
  }
  for (size_t pos = 0; pos < original.size(); ++pos) {
    for (int bit : {0, 3, 7}) {
      Pair pair(secure);
      std::string corrupted = original;
      corrupted[pos] = static_cast<char>(corrupted[pos] ^ (1 << bit));
      BufferList input;
      input.append_copy(corrupted);
      Frame frame;
      try {
        // A corrupted length may make the reader wait for bytes that never come: that is not a
        // delivery. It must never hand up a frame.
        bool got = pair.rx.read(input, &frame);
        EXPECT_FALSE(got) << "corruption at byte " << pos << " bit " << bit << " was delivered";
      } catch (const FrameError&) {
      } catch (const CryptoError&) {
      }
    }
  }
}

TEST_P(FrameModes, OversizedSegmentRejectedFromPreambleAlone) {
  const bool secure = GetParam();
  FrameLimits small;
  small.max_segment = 100;
  small.max_data_segment = 1000;
  small.max_frame = 1050;
  uint16_t aligns[4] = {8, 8, 8, 4096};
  struct Case {
    std::array<size_t, 4> lens;
    bool ok;
  } cases[] = {
      {{100, 0, 0, 0}, true},     {{101, 0, 0, 0}, false},   {{41, 100, 0, 0}, true},
      {{41, 0, 101, 0}, false},   {{41, 0, 0, 1000}, true},  {{41, 0, 0, 1001}, false},
      {{41, 100, 0, 1000}, false},  // total over max_frame
  };
  for (const auto& c : cases) {
    Pair pair(secure, small);
    std::array<BufferList, 4> segs;
    for (size_t i = 0; i < 4; ++i) segs[i] = bytes_of(c.lens[i], 9);
    BufferList wire;
    pair.tx.assemble(Tag::Message, segs, aligns, wire);
    BufferList input;
    size_t first = secure ? 96 : 32;
    wire.splice_front(first, input);  // only the preamble: the limit must already apply
    Frame frame;
    if (c.ok) {
      EXPECT_FALSE(pair.rx.read(input, &frame));
      input.append(wire);
      EXPECT_TRUE(pair.rx.read(input, &frame));
    } else {
      EXPECT_THROW(pair.rx.read(input, &frame), FrameError);
    }
  }
}

// assemble_message writes the same bytes as assemble() with the header as segment 0, and a
// connection that keeps sending (its output consumed as it goes) reuses its scratch blocks: no
// allocation per frame once the spares exist.
TEST_P(FrameModes, MessageFramesMatchGenericAssemblyAndReuseScratch) {
  const bool secure = GetParam();
  Pair generic(secure), direct(secure);
  const BufferList header = bytes_of(41, 3), front = bytes_of(20, 4), data = bytes_of(4096, 5);
  BufferList middle;
  std::array<BufferList, 4> segs = {header, front, middle, data};
  const uint16_t aligns[4] = {kDefaultAlignment, kDefaultAlignment, kDefaultAlignment, kPageAlignment};
  const std::string header_bytes = header.to_string();
  uint64_t blocks_after_warmup = 0;
  // A crc-mode frame here takes 90 scratch bytes: 12,000 frames fill a 256 KiB block four times.
  for (int i = 0; i < 12000; ++i) {
    BufferList a, b;
    generic.tx.assemble(Tag::Message, segs, aligns, a);
    direct.tx.assemble_message(header_bytes, front, middle, data, b);
    ASSERT_TRUE(a.contents_equal(b)) << "frame " << i;
    Frame frame;
    ASSERT_TRUE(direct.rx.read(b, &frame));
    ASSERT_TRUE(frame.segments[3].contents_equal(data));
    if (i == 6000) blocks_after_warmup = direct.tx.scratch_blocks_allocated();
  }
  EXPECT_GE(blocks_after_warmup, 1u);
  EXPECT_EQ(direct.tx.scratch_blocks_allocated(), blocks_after_warmup) << "scratch blocks are not reused";
}

// Random bytes where a frame should start: shorter than the preamble block they are left alone
// (the reader waits for more); from a full block on, every one is rejected with the specific error
// of its mode (the preamble crc in crc mode, GCM authentication in secure mode), which is what
// closes the connection; never is a frame made of them.
TEST_P(FrameModes, RandomGarbageIsRejected) {
  const bool secure = GetParam();
  std::mt19937 rng(1234);
  const size_t block = secure ? kPreambleSize + kPreambleInlineSize + kAesGcmTagLen : kPreambleSize;
  int short_inputs = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Pair pair(secure);
    std::string junk(rng() % 300, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    BufferList input;
    input.append_copy(junk);
    Frame frame;
    if (junk.size() < block) {
      EXPECT_FALSE(pair.rx.read(input, &frame)) << junk.size() << " bytes made a frame";
      EXPECT_EQ(input.length(), junk.size()) << "a reader waiting for a whole block consumed part of it";
      EXPECT_EQ(pair.rx.wanted(), block);
      ++short_inputs;
      continue;
    }
    try {
      pair.rx.read(input, &frame);
      ADD_FAILURE() << junk.size() << " random bytes were taken for a " << tag_name(frame.tag) << " frame";
    } catch (const FrameError& e) {
      EXPECT_FALSE(secure) << "secure mode must fail authentication first, not: " << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("bad preamble crc: calculated ", 0), 0u) << e.what();
      ++rejected;
    } catch (const CryptoError& e) {
      EXPECT_TRUE(secure) << "crc mode has no cipher, yet: " << e.what();
      EXPECT_NE(std::string(e.what()), "");
      ++rejected;
    }
  }
  EXPECT_EQ(short_inputs + rejected, 3000);
  EXPECT_GT(short_inputs, 0);
  EXPECT_GT(rejected, 2000);
}

INSTANTIATE_TEST_SUITE_P(CrcAndSecure, FrameModes, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "secure" : "crc"; });

TEST(FrameCrc, KnownPreambleBytes) {
  // A HELLO frame with a 5-byte payload, laid out by hand from the msgr2.1 format.
  FrameAssembler tx;
  BufferList payload;
  payload.append_copy("hello");
  BufferList wire;
  tx.assemble_control(Tag::Hello, payload, wire);
  std::string bytes = wire.to_string();
  ASSERT_EQ(bytes.size(), 32u + 5 + 4);
  EXPECT_EQ(bytes[0], 1);   // tag
  EXPECT_EQ(bytes[1], 1);   // one segment
  EXPECT_EQ(bytes[2], 5);   // segment 0 length
  EXPECT_EQ(bytes[6], 8);   // alignment 8
  for (int i = 8; i < 28; ++i) EXPECT_EQ(bytes[i], 0) << i;
  uint32_t pcrc = crc32c(0, bytes.data(), 28);
  EXPECT_EQ(static_cast<uint8_t>(bytes[28]), pcrc & 0xff);
  uint32_t scrc = crc32c(0xffffffffu, "hello", 5);
  EXPECT_EQ(static_cast<uint8_t>(bytes[37]), scrc & 0xff);
  EXPECT_EQ(static_cast<uint8_t>(bytes[40]), scrc >> 24);
}

// A verified segment remembers its crc, so bytes sent on (a reply echoing a request's data) get no
// second pass. The proof: a received data segment whose memory is changed behind the list's back
// goes out with the crc it arrived with (a real pass would send the new bytes' crc).
TEST(FrameCrc, ReceivedSegmentsAreSentOnWithTheirVerifiedCrc) {
  FrameAssembler tx;
  FrameReader rx;
  std::array<BufferList, 4> segs = {bytes_of(41, 1), bytes_of(0, 2), bytes_of(0, 3), bytes_of(4096, 4)};
  uint16_t aligns[4] = {8, 8, 8, 4096};
  BufferList wire;
  tx.assemble(Tag::Message, segs, aligns, wire);
  const std::string sent = wire.to_string();
  const uint32_t data_crc = crc32c(0xffffffffu, segs[3].to_string().data(), 4096);
  Frame frame;
  ASSERT_TRUE(rx.read(wire, &frame));
  ASSERT_EQ(frame.segments[3].length(), 4096u);
  EXPECT_EQ(frame.segments[3].crc32c(0xffffffffu), data_crc);
  frame.segments[3].segments()[0].data()[0] ^= 1;  // not through the list: it cannot know
  BufferList echoed;
  tx.assemble(Tag::Message, frame.segments, aligns, echoed);
  const std::string again = echoed.to_string();
  ASSERT_EQ(again.size(), sent.size());
  EXPECT_EQ(again.substr(again.size() - 4), sent.substr(sent.size() - 4)) << "the data crc was recomputed";
  // Through the list's own methods the change is seen and the crc is computed afresh.
  frame.segments[3].forget_crc32c();
  BufferList recomputed;
  tx.assemble(Tag::Message, frame.segments, aligns, recomputed);
  FrameReader check;
  Frame checked;
  EXPECT_TRUE(check.read(recomputed, &checked));
}

TEST(FrameCrc, AbortedLateStatusIsReported) {
  FrameAssembler tx;
  std::array<BufferList, 2> segs = {bytes_of(41, 1), bytes_of(10, 2)};
  uint16_t aligns[2] = {8, 8};
  BufferList wire;
  tx.assemble(Tag::Message, segs, aligns, wire);
  std::string bytes = wire.to_string();
  bytes[bytes.size() - kCrcEpilogueSize] = kLateStatusAborted;
  BufferList input;
  input.append_copy(bytes);
  FrameReader rx;
  Frame frame;
  ASSERT_TRUE(rx.read(input, &frame));
  EXPECT_TRUE(frame.aborted);
}

TEST(FrameCrc, UnknownTagAndCompressionFlagRejected) {
  for (int variant = 0; variant < 3; ++variant) {
    char preamble[32] = {};
    preamble[0] = variant == 0 ? 0 : variant == 1 ? 23 : 1;
    preamble[1] = 1;
    if (variant == 2) preamble[26] = 1;
    uint32_t crc = crc32c(0, preamble, 28);
    for (int i = 0; i < 4; ++i) preamble[28 + i] = static_cast<char>(crc >> (8 * i));
    BufferList input;
    input.append_copy(preamble, 32);
    FrameReader rx;
    Frame frame;
    EXPECT_THROW(rx.read(input, &frame), FrameError) << variant;
  }
}

}  // namespace
}  // namespace bypass::msgr::wire
