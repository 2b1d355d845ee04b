// Writes frames to a pcap file (link type Ethernet, nanosecond timestamps) through libpcap, so a
// test's traffic can be read with tshark or Wireshark: `tshark -r file.pcap`.
#pragma once

#include <pcap/pcap.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace bypass::test {

class PcapWriter {
 public:
  // Creates (or truncates) `path`; ok() says whether that worked, error() why not.
  explicit PcapWriter(const std::string& path);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  bool ok() const { return dumper_ != nullptr; }
  const std::string& error() const { return error_; }
  // One frame, stamped `at` after the clock's epoch (a virtual clock's: the file's times start at
  // 1970 plus the test's virtual time).
  void write(std::chrono::nanoseconds at, const uint8_t* frame, size_t size);
  void flush();

 private:
  pcap_t* handle_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
  std::string error_;
};

}  // namespace bypass::test
