// The thread-local "last error" message of the plugin ABI: every host API function that fails
// leaves its message here, and plugins leave theirs before returning a failure status. C
// hosts read it with mt_last_error().
#pragma once

#include <string>
#include <string_view>

namespace mt {

void set_last_error(std::string_view message);
void clear_last_error();
// The message of the last failure on this thread ("" if none); valid until the next failure.
const char* last_error();

} // namespace mt

extern "C" const char* mt_last_error(void);
