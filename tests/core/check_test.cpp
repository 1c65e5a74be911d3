// Tests of internal checks (core/support/check.h): a failed MT_ICHECK is an InternalError that
// names the file and line of the check and says that it is a bug; a check that holds costs
// nothing (its message is not built); user errors stay std::invalid_argument, apart from it.
#include "core/support/check.h"

#include <gtest/gtest.h>

#include <string>

#include "core/ir/expr.h"
#include "core/lower/lower.h"

namespace mt {
namespace {

int failing_line = 0;

void fail_a_check(int value) {
  failing_line = __LINE__ + 1;
  MT_ICHECK(value == 1, "value is ", value, ", expected 1");
}

TEST(InternalCheck, FailureNamesFileLineAndSaysBug) {
  try {
    fail_a_check(2);
    FAIL() << "MT_ICHECK did not throw";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.file(), "tests/core/check_test.cpp");
    EXPECT_EQ(e.line(), failing_line);
    EXPECT_EQ(e.condition(), "value == 1");
    EXPECT_EQ(e.message(), "value is 2, expected 1");
    std::string what = e.what();
    EXPECT_NE(what.find("tests/core/check_test.cpp:" + std::to_string(failing_line)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("value is 2, expected 1"), std::string::npos) << what;
    EXPECT_NE(what.find("check 'value == 1' failed"), std::string::npos) << what;
    EXPECT_NE(what.find("this is a bug in metatune, please report it"), std::string::npos) << what;
  }
}

TEST(InternalCheck, HoldingCheckBuildsNoMessage) {
  int built = 0;
  auto part = [&] {
    ++built;
    return "never";
  };
  MT_ICHECK(1 + 1 == 2, part());
  MT_ICHECK(true);
  EXPECT_EQ(built, 0);
  EXPECT_THROW(MT_ICHECK(false, part()), InternalError);
  EXPECT_EQ(built, 1);
}

TEST(InternalCheck, IsNotAUserError) {
  // Code that turns bad input into a message catches std::invalid_argument: an internal error
  // must not be taken for one.
  bool caught_as_user_error = false;
  try {
    try {
      MT_ICHECK(false, "an invariant");
    } catch (const std::invalid_argument&) {
      caught_as_user_error = true;
    }
  } catch (const InternalError& e) {
    EXPECT_EQ(e.condition(), "false");
    EXPECT_EQ(std::string(e.what()).find("check '"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(caught_as_user_error);
}

// A pass run out of order is an invariant of core's own, reported from the pass's file.
TEST(InternalCheck, CoreInvariantFromItsSourceFile) {
  Buffer a = make_buffer("A", DType::f32(), {4});
  Expr i = make_var("i");
  Block block;
  block.name = "B";
  block.iter_vars = {IterVar{i, 4, IterKind::Spatial}};
  block.body = make_store(a, {i}, float_imm(1.0));
  Stmt unlowered =
      make_for(make_var("l"), 4, make_block_realize({make_var("l")}, Expr(), std::move(block)));
  try {
    compact_buffers(unlowered);
    FAIL() << "compact_buffers accepted a block";
  } catch (const InternalError& e) {
    EXPECT_EQ(e.file(), "core/lower/compact_buffer.cpp");
    EXPECT_GT(e.line(), 0);
    EXPECT_NE(std::string(e.what()).find("bug"), std::string::npos) << e.what();
  }
}

// What a user writes wrong is still a user error that names what is wrong.
TEST(InternalCheck, UserErrorsStayInvalidArgument) {
  try {
    make_select(make_var("c", DType::boolean()), float_imm(1.0),
                make_var("x", DType::i32()) + make_var("y", DType::i32()));
    FAIL() << "a select of f32 and i32 was accepted";
  } catch (const InternalError& e) {
    FAIL() << "user error reported as internal: " << e.what();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("f32 vs i32"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace mt
