#include "core/plugin/last_error.h"

namespace mt {

namespace {
// One slot per thread, shared by the host and every plugin (plugins reach it through the
// host API table), so a message set on either side of a call is seen by the other.
//
// Static objects destroyed at exit (a plugin component a test or an application keeps in a
// static) still call into plugins, which clear and set the slot -- after the main thread's
// thread_local objects are gone. `g_slot_gone` has no destructor, so it stays readable to the
// end, and a gone slot takes no more writes.
thread_local bool g_slot_gone = false;
struct Slot {
  std::string text;
  ~Slot() { g_slot_gone = true; }
};
thread_local Slot g_slot;
} // namespace

void set_last_error(std::string_view message) {
  if (!g_slot_gone) g_slot.text.assign(message);
}
void clear_last_error() {
  if (!g_slot_gone) g_slot.text.clear();
}
const char* last_error() {
  return g_slot_gone ? "" : g_slot.text.c_str();
}

} // namespace mt

extern "C" const char* mt_last_error(void) {
  return mt::last_error();
}
