// sdk/cuda_arch.hpp: the one parser of CUDA architecture names the tensor-core rule and the
// cuda target share.
#include <gtest/gtest.h>

#include "metatune/sdk/cuda_arch.hpp"

namespace mt {
namespace {

TEST(SdkCudaArch, NamesBecomeTheirNumberAndAnythingElseZero) {
  EXPECT_EQ(sdk::sm_version("sm_80"), 80);
  EXPECT_EQ(sdk::sm_version("sm_90a"), 90);
  EXPECT_EQ(sdk::sm_version("sm_120"), 120);
  EXPECT_EQ(sdk::sm_version("sm_7"), 7);
  for (const char* bad : {"", "sm_", "sm_x90", "compute_90", "gfx90a", "SM_80", "sm_-80", "sm_0"})
    EXPECT_EQ(sdk::sm_version(bad), 0) << bad;
}

} // namespace
} // namespace mt
