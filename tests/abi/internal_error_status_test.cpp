// Tests that an internal check failing inside the host crosses the plugin ABI as
// MT_ERROR_INTERNAL with its message (file, line, "bug"), apart from a user error, which stays
// MT_ERROR_INVALID_ARGUMENT (docs/errors.md).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/plugin/host_handles.h"
#include "core/plugin/last_error.h"
#include "core/support/check.h"

namespace mt {
namespace {

template <typename F> mt_status status_of(F&& body) {
  try {
    body();
  } catch (...) {
    return plugin_detail::report_current_exception("host_fn");
  }
  return MT_OK;
}

TEST(InternalErrorAcrossAbi, IsMtErrorInternalWithFileLineAndBug) {
  int line = __LINE__ + 1;
  mt_status st = status_of([] { MT_ICHECK(1 > 2, "an invariant of the host"); });
  EXPECT_EQ(st, MT_ERROR_INTERNAL);
  std::string msg = mt_last_error();
  EXPECT_EQ(msg.rfind("host_fn: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("internal_error_status_test.cpp:" + std::to_string(line)), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("an invariant of the host"), std::string::npos) << msg;
  EXPECT_NE(msg.find("this is a bug in metatune"), std::string::npos) << msg;
}

TEST(InternalErrorAcrossAbi, UserErrorStaysInvalidArgument) {
  mt_status st = status_of([] { throw std::invalid_argument("workload 'x': bad parameter"); });
  EXPECT_EQ(st, MT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(mt_last_error(), "host_fn: workload 'x': bad parameter");
}

} // namespace
} // namespace mt
