// The committed golden capture (tests/unit/msgr/ceph_frames/, recorded by capture.sh from a real
// ceph-mon and the ceph CLI): Bypass reads every frame Ceph sent and reproduces it byte for byte
// (ceph_frames_check.h). The ceph-interop suite runs the same checks on a fresh capture.
#include <gtest/gtest.h>

#include "tests/unit/msgr/ceph_frames_check.h"

namespace bypass::msgr::test {
namespace {

class CephFrames : public ::testing::TestWithParam<std::string> {};

TEST_P(CephFrames, BypassReadsAndReproducesWhatCephSent) {
  check_ceph_capture(GetParam(), load_ceph_capture(BYPASS_CEPH_FRAMES_DIR, GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Captured, CephFrames, ::testing::ValuesIn(kCephCaptureScenarios), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

}  // namespace
}  // namespace bypass::msgr::test
