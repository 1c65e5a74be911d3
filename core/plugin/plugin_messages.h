// Messages that plugins log (the API table's `log`, and those that measurement workers forward
// to their parent), on their way to the host's log sink (plugin_log, host_api.h). A message at
// info or warning level is said once per process: a target that says what it recognised says
// it at every build of the same program (each trial's library candidate, every re-measurement,
// every fresh worker), and the repeats tell the reader nothing new. Debug messages (a trace the
// reader asked for) and errors (each one a failure of its own) always pass.
//
// The filter lives here rather than in each plugin because a plugin cannot keep it: builds run
// in forked workers whose memory dies with them, and a target instance is created anew for
// each use. Only the host's parent process sees every message. The key is the whole text,
// which by convention starts with the component's name ("onednn.cpu: ..."): the API table is
// shared by all plugins, so the host does not know which component called it.
#pragma once

#include <string_view>

namespace mt {

void log_plugin_message(int level, std::string_view message);

} // namespace mt
