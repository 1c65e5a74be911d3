// Internal invariants: MT_ICHECK(cond, message parts...) throws mt::InternalError, which names
// the file and line of the check and says that this is a bug in metatune. It is for what no
// input can cause (a pass run out of order, an enum value outside its list, two arrays the
// code itself keeps in step); what a user, a plugin or an embedding program can get wrong
// stays a std::invalid_argument (or ScheduleError, ...) that names what and where
// (docs/errors.md).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mt {

class InternalError : public std::logic_error {
public:
  // `file` as the check's __FILE__ (shortened to the path in the source tree where it can be),
  // `condition` the checked expression's text ("false" for a check that always fails).
  InternalError(std::string file, int line, std::string condition, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& condition() const { return condition_; }
  const std::string& message() const { return message_; }

private:
  std::string file_;
  int line_;
  std::string condition_, message_;
};

namespace check_detail {

// This header's own path as the compiler sees it, so that a check's __FILE__ can be shortened
// to the path below the source root however the build spells it (absolute, or relative as
// ccache rewrites it).
inline constexpr std::string_view kCheckHeader = __FILE__;
inline constexpr std::string_view kCheckHeaderInTree = "core/support/check.h";

inline std::string source_path(std::string_view file) {
  if (kCheckHeader.size() >= kCheckHeaderInTree.size() &&
      kCheckHeader.substr(kCheckHeader.size() - kCheckHeaderInTree.size()) == kCheckHeaderInTree) {
    std::string_view root = kCheckHeader.substr(0, kCheckHeader.size() - kCheckHeaderInTree.size());
    if (!root.empty() && file.substr(0, root.size()) == root) file.remove_prefix(root.size());
  }
  return std::string(file);
}

template <typename... Parts> std::string message(const Parts&... parts) {
  std::ostringstream os;
  ((os << parts), ...);
  return os.str();
}

[[noreturn]] void fail(std::string file, int line, const char* condition,
                       const std::string& message);

} // namespace check_detail
} // namespace mt

// The message is built only when the check fails.
#define MT_ICHECK(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::mt::check_detail::fail(::mt::check_detail::source_path(__FILE__), __LINE__, #cond,         \
                               ::mt::check_detail::message(__VA_ARGS__));                          \
  } while (0)
