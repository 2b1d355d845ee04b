// Golden msgr2 frames from real Ceph: what a real ceph-mon and the ceph CLI (a real Ceph client)
// sent each other, recorded by tests/unit/msgr/ceph_frames/capture.sh. check_ceph_capture() reads
// both directions with Bypass's frame reader and control-frame declarations, encodes and frames
// every frame again (it must give the recorded bytes exactly), builds the frames whose fields are
// all known in advance from scratch (they must too), and checks the fields Ceph sets the same way
// every run. msgr-wire checks the committed capture; ceph-interop a fresh one from its monitors.
#pragma once

#include <string>
#include <vector>

namespace bypass::msgr::test {

// One recorded connection.
struct CephCapture {
  std::string client_bytes;     // what the ceph CLI sent: banner, then frames
  std::string server_bytes;     // what the monitor sent
  std::string client_endpoint;  // "127.0.0.1:PORT" of the CLI's socket
  std::string server_endpoint;  // "127.0.0.1:PORT" of the monitor's
};

// capture.sh's scenarios: auth none in crc mode, cephx in crc and in secure mode, and auth none
// offered to a cephx monitor.
inline const std::vector<std::string> kCephCaptureScenarios = {"none-crc", "cephx-crc", "cephx-secure", "bad-method"};

// Reads DIR/SCENARIO.{client,server,endpoints}; fails the current test when one is missing or empty.
CephCapture load_ceph_capture(const std::string& dir, const std::string& scenario);

// Checks one capture of `scenario` with gtest expectations.
void check_ceph_capture(const std::string& scenario, const CephCapture& capture);

}  // namespace bypass::msgr::test
