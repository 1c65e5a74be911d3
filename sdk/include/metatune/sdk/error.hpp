// The SDK's link to the host and its error model: the host API table (set by the plugin's
// entry point), sdk::Error thrown for every failing host call, and guard(), which turns any
// exception back into a status at the plugin's side of the boundary so that none crosses it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "metatune/plugin_api.h"

namespace mt::sdk {

namespace detail {
// One per plugin library (headers are compiled into each plugin with hidden visibility).
inline const mt_host_api* g_host_api = nullptr;
} // namespace detail

// The host's API table. Valid once the entry point has run (always, inside callbacks).
inline const mt_host_api& api() {
  if (!detail::g_host_api)
    throw std::logic_error("metatune SDK used before the plugin entry point ran");
  return *detail::g_host_api;
}

// A failed call into the host (status + the host's message), or a failure a plugin reports.
class Error : public std::runtime_error {
public:
  Error(mt_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  explicit Error(const std::string& message) : Error(MT_ERROR_PLUGIN, message) {}
  mt_status status() const { return status_; }

private:
  mt_status status_;
};

// A schedule primitive refused (illegal transformation): rules catch this to try another way.
class ScheduleError : public Error {
public:
  using Error::Error;
};

// Thrown by a postprocessor to reject a candidate (with the reason).
class Rejected : public Error {
public:
  explicit Rejected(const std::string& reason) : Error(MT_ERROR_REJECTED, reason) {}
};

// Throws the matching Error if `status` is a failure (oneDNN's wrap_c_api).
inline void check(mt_status status) {
  if (status == MT_OK) return;
  std::string message = api().last_error();
  if (message.empty()) message = mt_status_name(status);
  if (status == MT_ERROR_SCHEDULE) throw ScheduleError(status, message);
  throw Error(status, message);
}

inline mt_str to_mt_str(std::string_view s) {
  return mt_str{s.data(), s.size()};
}
inline std::string to_string(mt_str s) {
  return s.data ? std::string(s.data, s.size) : std::string();
}

namespace detail {

inline void set_error(const char* message) noexcept {
  if (!g_host_api) return;
  try {
    g_host_api->set_last_error(to_mt_str(message));
  } catch (...) {
  }
}

// Runs a plugin callback body: exceptions become a status plus the thread's last error.
template <typename F> mt_status guard(F&& body) noexcept {
  try {
    body();
    return MT_OK;
  } catch (const Error& e) {
    set_error(e.what());
    return e.status() == MT_OK ? MT_ERROR_PLUGIN : e.status();
  } catch (const std::exception& e) {
    set_error(e.what());
    return MT_ERROR_PLUGIN;
  } catch (...) {
    set_error("unknown exception in plugin");
    return MT_ERROR_PLUGIN;
  }
}

} // namespace detail

} // namespace mt::sdk
