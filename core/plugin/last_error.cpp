#include "core/plugin/last_error.h"

namespace mt {

namespace {
// One slot per thread, shared by the host and every plugin (plugins reach it through the
// host API table), so a message set on either side of a call is seen by the other.
thread_local std::string g_last_error;
} // namespace

void set_last_error(std::string_view message) {
  g_last_error.assign(message);
}
void clear_last_error() {
  g_last_error.clear();
}
const char* last_error() {
  return g_last_error.c_str();
}

} // namespace mt

extern "C" const char* mt_last_error(void) {
  return mt::last_error();
}
