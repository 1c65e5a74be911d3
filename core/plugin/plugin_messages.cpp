// Plugin messages said once (see plugin_messages.h).
#include "core/plugin/plugin_messages.h"

#include <mutex>
#include <string>
#include <unordered_set>

#include "core/plugin/host_api.h"
#include "metatune/plugin_api.h"

namespace mt {

namespace {

// Bounds the memory a plugin that logs ever-new texts can take; past it, messages pass.
constexpr size_t kMaxRemembered = 4096;

class SaidOnce {
public:
  // True the first time `level` and `message` come together.
  bool first_time(int level, std::string_view message) {
    std::string key = std::to_string(level) + ":";
    key += message;
    std::lock_guard<std::mutex> lock(mutex_);
    if (said_.count(key)) return false;
    if (said_.size() < kMaxRemembered) said_.insert(std::move(key));
    return true;
  }

private:
  std::mutex mutex_;
  std::unordered_set<std::string> said_;
};

SaidOnce& said_once() {
  static SaidOnce* s = new SaidOnce(); // never destroyed: plugins may log during exit
  return *s;
}

} // namespace

void log_plugin_message(int level, std::string_view message) {
  bool repeatable = level <= MT_LOG_DEBUG || level >= MT_LOG_ERROR;
  if (!repeatable && !said_once().first_time(level, message)) return;
  plugin_log(level, message);
}

} // namespace mt
