#include "tools/fio/target_protocol.h"

#include <string_view>

#include "msgr/wire/codec.h"

namespace bypass::fio {

namespace {

using msgr::wire::Decoder;
using msgr::wire::Encoder;
using msgr::wire::FlatEncoder;

// The front of a received message as one contiguous view (fronts are a few bytes: received in
// one segment, copied only when the transport split them).
std::string_view front_bytes(const msgr::Message& m, std::string& scratch) {
  const BufferList& front = m.front();
  if (front.segment_count() == 1) return front.segments()[0].view();
  scratch = front.to_string();
  return scratch;
}

template <typename Body>
Body decode_front(const msgr::Message& m, const char* what, Body (*read)(Decoder&)) {
  std::string scratch;
  Decoder dec(front_bytes(m, scratch), what);
  Body body = read(dec);
  if (!dec.at_end()) dec.fail("end", std::to_string(dec.remaining()) + " bytes of trailing garbage");
  return body;
}

}  // namespace

void OpenRequest::encode(BufferList& front) const {
  Encoder enc(front);
  enc.blob(name);
  enc.u64(size);
}

OpenRequest OpenRequest::decode(const msgr::Message& m) {
  return decode_front<OpenRequest>(m, "fio open request", [](Decoder& dec) {
    OpenRequest r;
    r.name = dec.blob("name");
    r.size = dec.u64("size");
    return r;
  });
}

void OpenReply::encode(BufferList& front) const {
  Encoder enc(front);
  enc.i32(status);
  enc.u64(object);
  enc.blob(error);
}

OpenReply OpenReply::decode(const msgr::Message& m) {
  return decode_front<OpenReply>(m, "fio open reply", [](Decoder& dec) {
    OpenReply r;
    r.status = dec.i32("status");
    r.object = dec.u64("object");
    r.error = dec.blob("error");
    return r;
  });
}

void IoRequest::encode(BufferList& front) const {
  // Once per request: the fields go into one array and the front gets one copy of it (an Encoder
  // appends field by field: four appends, ~460 instructions against ~120; callgrind, docs/fio.md).
  char bytes[1 + 8 + 8 + 4];
  FlatEncoder enc(bytes);
  enc.u8(static_cast<uint8_t>(op));
  enc.u64(object);
  enc.u64(offset);
  enc.u32(length);
  front.append_copy(bytes, sizeof(bytes));
}

IoRequest IoRequest::decode(const msgr::Message& m) {
  return decode_front<IoRequest>(m, "fio io request", [](Decoder& dec) {
    IoRequest r;
    const uint8_t op = dec.u8("op");
    if (op > static_cast<uint8_t>(IoOp::write)) dec.fail("op", "unknown operation " + std::to_string(op));
    r.op = static_cast<IoOp>(op);
    r.object = dec.u64("object");
    r.offset = dec.u64("offset");
    r.length = dec.u32("length");
    return r;
  });
}

void IoReply::encode(BufferList& front) const {
  Encoder enc(front);
  enc.i32(status);
}

IoReply IoReply::decode(const msgr::Message& m) {
  return decode_front<IoReply>(m, "fio io reply", [](Decoder& dec) {
    IoReply r;
    r.status = dec.i32("status");
    return r;
  });
}

}  // namespace bypass::fio
