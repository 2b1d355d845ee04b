#include "tests/unit/msgr/ceph_frames_check.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "msgr/wire/banner.h"
#include "msgr/wire/control_frames.h"
#include "msgr/wire/message_header.h"

namespace bypass::msgr::test {
namespace {

using wire::Tag;

// What a scenario's connection carries in plain text, in order. In crc mode the recorded frames
// go on with MESSAGE frames (the CLI's `mon dump`) to the end; in secure mode each side encrypts
// from its next frame on, and the check stops there.
struct Scenario {
  std::string name;
  uint32_t con_mode;  // what AUTH_DONE says (0: no AUTH_DONE)
  bool whole_streams_plain;
  std::vector<Tag> client;
  std::vector<Tag> server;
};

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = {
      {"none-crc", wire::kConModeCrc, true,
       {Tag::Hello, Tag::AuthRequest, Tag::AuthSignature, Tag::ClientIdent},
       {Tag::Hello, Tag::AuthDone, Tag::AuthSignature, Tag::ServerIdent}},
      {"cephx-crc", wire::kConModeCrc, true,
       {Tag::Hello, Tag::AuthRequest, Tag::AuthRequestMore, Tag::AuthSignature, Tag::ClientIdent},
       {Tag::Hello, Tag::AuthReplyMore, Tag::AuthDone, Tag::AuthSignature, Tag::ServerIdent}},
      {"cephx-secure", wire::kConModeSecure, false,
       {Tag::Hello, Tag::AuthRequest, Tag::AuthRequestMore},
       {Tag::Hello, Tag::AuthReplyMore, Tag::AuthDone}},
      // The monitor refuses, and both sides close.
      {"bad-method", 0, true, {Tag::Hello, Tag::AuthRequest}, {Tag::Hello, Tag::AuthBadMethod}},
  };
  return all;
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One frame as it was on the wire, and as the frame reader delivered it.
struct RecordedFrame {
  wire::Frame frame;
  std::string bytes;
};

struct RecordedSide {
  std::string who;  // "the ceph CLI", "the monitor": for failure messages
  wire::Banner banner;
  std::vector<RecordedFrame> frames;
};

// Reads the banner, then up to `max_frames` frames (all of them when the stream is plain to its
// end, which must then be a frame boundary).
RecordedSide read_side(const std::string& who, const std::string& bytes, size_t max_frames) {
  RecordedSide side{who, {}, {}};
  BufferList in;
  in.append_copy(bytes);
  try {
    wire::BannerReader banner_reader;
    if (!banner_reader.read(in, &side.banner)) {
      ADD_FAILURE() << who << " sent no whole banner (" << bytes.size() << " bytes)";
      return side;
    }
    size_t offset = bytes.size() - in.length();
    wire::FrameReader reader;
    while (side.frames.size() < max_frames && offset < bytes.size()) {
      RecordedFrame f;
      if (!reader.read(in, &f.frame)) {
        ADD_FAILURE() << who << ": the last " << bytes.size() - offset << " bytes are not a whole frame";
        break;
      }
      f.bytes = bytes.substr(offset, f.frame.onwire_length);
      offset += f.frame.onwire_length;
      side.frames.push_back(std::move(f));
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << who << ": frame " << side.frames.size() << " does not read: " << e.what();
  }
  return side;
}

// Decodes a frame by its declaration, encodes and frames it again: both must be the recorded bytes.
// Returns its description for later failure messages.
std::string check_reencodes(const RecordedSide& side, const RecordedFrame& f) {
  const std::string payload = f.frame.segments[0].to_string();
  const std::string where = side.who + "'s " + wire::tag_name(f.frame.tag);
  std::string described;
  try {
    const bool declared = wire::visit_control_frame(f.frame.tag, [&]<typename F>() {
      const F decoded = wire::decode_control<F>(payload);
      described = wire::describe(decoded);
      BufferList encoded;
      wire::encode(decoded, encoded);
      EXPECT_EQ(hex(encoded.to_string()), hex(payload)) << where << " encodes differently: " << described;
      EXPECT_EQ(f.frame.num_segments, 1u) << where;
      wire::FrameAssembler tx;
      BufferList framed;
      tx.assemble_control(wire::frame_tag<F>, encoded, framed);
      EXPECT_EQ(hex(framed.to_string()), hex(f.bytes)) << where << " is framed differently: " << described;
    });
    if (declared) return described;
    if (f.frame.tag != Tag::Message) {
      ADD_FAILURE() << where << ": Bypass declares no such frame";
      return described;
    }
    const wire::MessageHeader2 header = wire::MessageHeader2::decode(payload);
    BufferList header_again;
    header.encode(header_again);
    EXPECT_EQ(hex(header_again.to_string()), hex(payload)) << where << " header encodes differently";
    wire::FrameAssembler tx;
    BufferList framed;
    tx.assemble(Tag::Message, std::span(f.frame.segments.data(), f.frame.num_segments),
                std::span(f.frame.alignments.data(), f.frame.num_segments), framed);
    EXPECT_EQ(hex(framed.to_string()), hex(f.bytes)) << where << " (type " << header.type << ") is framed differently";
    return "MESSAGE{type=" + std::to_string(header.type) + ", seq=" + std::to_string(header.seq) + "}";
  } catch (const std::exception& e) {
    ADD_FAILURE() << where << " does not decode: " << e.what() << "\npayload " << hex(payload);
    return described;
  }
}

// The frame at `index` of a side, decoded by its declaration (the tag sequence was checked before).
template <typename F>
F frame_at(const RecordedSide& side, size_t index) {
  return wire::decode_control<F>(side.frames.at(index).frame.segments[0].to_string());
}

// The only frame of type F among `side`'s plain-text handshake frames.
template <typename F>
F the(const RecordedSide& side, const std::vector<Tag>& plain) {
  for (size_t i = 0; i < plain.size(); ++i)
    if (plain[i] == wire::frame_tag<F>) return frame_at<F>(side, i);
  throw std::logic_error(std::string("scenario has no ") + wire::tag_name(wire::frame_tag<F>));
}

template <typename F>
bool has(const std::vector<Tag>& plain) {
  return std::find(plain.begin(), plain.end(), wire::frame_tag<F>) != plain.end();
}

// Frames `frame` as Bypass would send it; `recorded` is what Ceph sent.
template <typename F>
void expect_same_bytes(const F& frame, const RecordedSide& side, const std::vector<Tag>& plain) {
  BufferList payload, framed;
  wire::encode(frame, payload);
  wire::FrameAssembler tx;
  tx.assemble_control(wire::frame_tag<F>, payload, framed);
  for (size_t i = 0; i < plain.size(); ++i) {
    if (plain[i] != wire::frame_tag<F>) continue;
    EXPECT_EQ(hex(framed.to_string()), hex(side.frames.at(i).bytes))
        << side.who << "'s " << wire::tag_name(wire::frame_tag<F>) << " differs from Bypass's " << wire::describe(frame)
        << ": it sent " << wire::describe(frame_at<F>(side, i));
  }
}

// "127.0.0.1:PORT" as the v2 entity address Ceph puts on the wire for it (nonce 0).
EntityAddr v2_addr(const std::string& endpoint) {
  EntityAddr addr;
  EXPECT_TRUE(EntityAddr::parse("v2:" + endpoint + "/0", &addr)) << endpoint;
  return addr;
}

// The fields Ceph sets the same way every run: the frames whose every field is known beforehand
// are built from scratch and must match byte for byte; of the others (with cookies, nonces,
// global ids, cephx keys), the fields that do not vary are compared.
void check_fields(const Scenario& s, const RecordedSide& client, const RecordedSide& server, const CephCapture& capture) {
  // Banners: both sides speak msgr2.1 (REVISION_1) and require nothing Bypass lacks (Ceph
  // requires no msgr2 feature at all: CEPH_MSGR2_REQUIRED_FEATURES is 0).
  for (const RecordedSide* side : {&client, &server}) {
    EXPECT_TRUE(side->banner.supported & wire::kMsgr2FeatureRevision1) << side->who;
    EXPECT_EQ(side->banner.required & ~wire::kMsgr2SupportedFeatures, 0u) << side->who;
  }
  // HELLO: each side names its type and the address it sees for the other.
  EntityAddr client_seen = v2_addr(capture.client_endpoint);
  expect_same_bytes(wire::HelloFrame{EntityType::Client, v2_addr(capture.server_endpoint)}, client, s.client);
  expect_same_bytes(wire::HelloFrame{EntityType::Mon, client_seen}, server, s.server);

  const bool cephx = s.name.rfind("cephx", 0) == 0;
  const auto request = the<wire::AuthRequestFrame>(client, s.client);
  EXPECT_EQ(request.method, cephx ? wire::kAuthCephx : wire::kAuthNone);
  EXPECT_EQ(request.preferred_modes, std::vector<uint32_t>{s.con_mode ? s.con_mode : wire::kConModeCrc});

  if (has<wire::AuthBadMethodFrame>(s.server)) {
    // A cephx-only monitor refusing auth none: cephx is the method it allows, in either mode
    // (ms_mon_service_mode's default "secure crc").
    expect_same_bytes(wire::AuthBadMethodFrame{wire::kAuthNone, -EOPNOTSUPP, {wire::kAuthCephx},
                                               {wire::kConModeSecure, wire::kConModeCrc}},
                      server, s.server);
  }
  if (has<wire::AuthDoneFrame>(s.server)) {
    const auto done = the<wire::AuthDoneFrame>(server, s.server);
    EXPECT_EQ(done.con_mode, s.con_mode);
    EXPECT_NE(done.global_id, 0u) << "the monitor assigns the client a global id";
    if (!cephx) {
      EXPECT_EQ(done.auth_payload, "") << "auth none has nothing to say";
    }
  }
  if (has<wire::AuthSignatureFrame>(s.server) && !cephx) {
    // Auth none yields no session key: both signatures are all zeros.
    expect_same_bytes(wire::AuthSignatureFrame{}, server, s.server);
    expect_same_bytes(wire::AuthSignatureFrame{}, client, s.client);
  }
  if (has<wire::ServerIdentFrame>(s.server)) {
    const auto server_ident = the<wire::ServerIdentFrame>(server, s.server);
    const auto client_ident = the<wire::ClientIdentFrame>(client, s.client);
    EXPECT_EQ(client_ident.target_addr, v2_addr(capture.server_endpoint));
    EXPECT_EQ(server_ident.addrs, (EntityAddrVec{{v2_addr(capture.server_endpoint)}}));
    EXPECT_EQ(server_ident.global_id, 0) << "mon.a is rank 0";
    EXPECT_EQ(client_ident.global_id, -1) << "the CLI's entity name is still CEPH_ENTITY_NAME_NEW";
    // Both ends run the same Ceph: the same features, each supporting what the other requires.
    EXPECT_EQ(client_ident.supported_features, server_ident.supported_features);
    EXPECT_EQ(client_ident.required_features & ~server_ident.supported_features, 0u);
    EXPECT_EQ(server_ident.required_features & ~client_ident.supported_features, 0u);
    // The CLI's policy towards the monitor is not lossy: no LOSSY flag, and a random cookie for
    // the session. The monitor's towards its clients is: LOSSY, and cookie 0 (no session to resume).
    EXPECT_EQ(client_ident.flags, 0u);
    EXPECT_NE(client_ident.cookie, 0u);
    EXPECT_EQ(server_ident.flags, wire::kIdentFlagLossy);
    EXPECT_EQ(server_ident.cookie, 0u);
  }
}

}  // namespace

CephCapture load_ceph_capture(const std::string& dir, const std::string& scenario) {
  CephCapture c;
  const std::string base = dir + "/" + scenario;
  c.client_bytes = read_file(base + ".client");
  c.server_bytes = read_file(base + ".server");
  std::istringstream endpoints(read_file(base + ".endpoints"));
  for (std::string who, endpoint; endpoints >> who >> endpoint;) {
    if (who == "client") c.client_endpoint = endpoint;
    if (who == "server") c.server_endpoint = endpoint;
  }
  EXPECT_FALSE(c.client_bytes.empty()) << base << ".client";
  EXPECT_FALSE(c.server_bytes.empty()) << base << ".server";
  EXPECT_FALSE(c.client_endpoint.empty() || c.server_endpoint.empty()) << base << ".endpoints";
  return c;
}

void check_ceph_capture(const std::string& name, const CephCapture& capture) {
  const Scenario* s = nullptr;
  for (const auto& candidate : scenarios())
    if (candidate.name == name) s = &candidate;
  ASSERT_NE(s, nullptr) << "unknown scenario " << name;
  const size_t all = std::numeric_limits<size_t>::max();
  const RecordedSide client = read_side("the ceph CLI", capture.client_bytes, s->whole_streams_plain ? all : s->client.size());
  const RecordedSide server = read_side("the monitor", capture.server_bytes, s->whole_streams_plain ? all : s->server.size());

  std::string transcript;  // every frame, decoded, for failure messages
  for (const RecordedSide* side : {&client, &server}) {
    transcript += side->who + ":\n";
    for (const auto& f : side->frames) transcript += "  " + check_reencodes(*side, f) + "\n";
  }
  SCOPED_TRACE(name + "\n" + transcript);
  // The handshake's frames in order; in crc mode only MESSAGE frames may follow (the monitor's
  // answers and the CLI's requests; Ceph sends no ACK to a lossy peer).
  for (auto [side, plain] : {std::pair{&client, &s->client}, std::pair{&server, &s->server}}) {
    ASSERT_GE(side->frames.size(), plain->size()) << side->who;
    for (size_t i = 0; i < side->frames.size(); ++i) {
      const Tag want = i < plain->size() ? (*plain)[i] : Tag::Message;
      EXPECT_EQ(wire::tag_name(side->frames[i].frame.tag), std::string(wire::tag_name(want)))
          << side->who << "'s frame " << i;
    }
  }
  check_fields(*s, client, server, capture);
}

}  // namespace bypass::msgr::test
