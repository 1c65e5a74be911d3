// The host side of the plugin ABI's API table: core's schedule, IR and tensor expressions
// behind the C functions of plugin_api/metatune/plugin_api/host_api.h. Every function of the
// table catches every exception and turns it into a status and the thread's last error.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "core/ir/function.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "metatune/plugin_api.h"

namespace mt {

// The table handed to every plugin (one per process, immutable).
const mt_host_api* host_api();

// Handles for host code that calls into plugins (and for tests of the table itself). Each
// returned handle carries one reference, to be dropped with the table's *_release.
mt_schedule* make_schedule_handle(std::shared_ptr<Schedule> sch);
std::shared_ptr<Schedule> schedule_of(const mt_schedule* handle);
mt_program* make_program_handle(Function func);
const Function& function_of(const mt_program* handle);
mt_trace* make_trace_handle(Trace trace);
const Trace& trace_of(const mt_trace* handle);

// Where plugin log messages and host warnings go (level = mt_log_level). The default prints
// warnings and errors to stderr.
using LogSink = std::function<void(int level, std::string_view message)>;
void set_plugin_log_sink(LogSink sink);
void plugin_log(int level, std::string_view message);

} // namespace mt
