#include "tests/support/pcap_writer.h"

namespace bypass::test {

namespace {
constexpr int kSnapLength = 65535;  // whole frames: the largest a test wire carries is 64 KiB
}  // namespace

PcapWriter::PcapWriter(const std::string& path) {
  // PCAP_TSTAMP_PRECISION_NANO makes the file's magic 0xa1b23c4d, in which a record's second
  // time field counts nanoseconds (pcap-savefile(5)).
  handle_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapLength, PCAP_TSTAMP_PRECISION_NANO);
  if (handle_ == nullptr) {
    error_ = "pcap_open_dead failed";
    return;
  }
  dumper_ = pcap_dump_open(handle_, path.c_str());
  if (dumper_ == nullptr) error_ = path + ": " + pcap_geterr(handle_);
}

PcapWriter::~PcapWriter() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);
  if (handle_ != nullptr) pcap_close(handle_);
}

void PcapWriter::write(std::chrono::nanoseconds at, const uint8_t* frame, size_t size) {
  if (dumper_ == nullptr) return;
  pcap_pkthdr header{};
  const auto count = at.count();
  header.ts.tv_sec = static_cast<time_t>(count / 1'000'000'000);
  header.ts.tv_usec = static_cast<suseconds_t>(count % 1'000'000'000);  // nanoseconds in a nano file
  header.caplen = static_cast<bpf_u_int32>(size < kSnapLength ? size : kSnapLength);
  header.len = static_cast<bpf_u_int32>(size);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &header, frame);
}

void PcapWriter::flush() {
  if (dumper_ != nullptr) pcap_dump_flush(dumper_);
}

}  // namespace bypass::test
