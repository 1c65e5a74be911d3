// Building and running one candidate (see measure_worker.h).
#include "core/measure/measure_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include "core/lower/lower.h"
#include "core/measure/packed_weights.h"
#include "core/plugin/plugin_error.h"
#include "core/runtime/arguments.h"

namespace mt::measure_detail {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Evicts the caches between repeats by writing a buffer larger than any last-level cache.
void flush_caches() {
  static std::vector<unsigned char>* buffer = new std::vector<unsigned char>(64u << 20);
  static unsigned char round = 0;
  ++round;
  unsigned char* p = buffer->data();
  for (size_t i = 0; i < buffer->size(); i += 64)
    p[i] = static_cast<unsigned char>(round + i);
  // Keeps the stores from being dropped as dead (the buffer is never read otherwise).
  asm volatile("" : : "r"(p) : "memory");
}

} // namespace

Built build_candidate(const PluginTarget& target, const Function& candidate,
                      const std::vector<bool>& weights) {
  Built b;
  auto t0 = Clock::now();
  try {
    Function lowered = candidate.lowered ? candidate : lower(candidate);
    b.module = target.build(lowered);
    for (size_t i = 0; i < weights.size(); ++i) {
      if (!weights[i]) continue;
      try {
        b.module->packed_layout(i);
      } catch (const std::exception&) {
        // Asked again before the run, which reports it.
      }
    }
  } catch (const PluginError& e) {
    b.module.reset();
    b.error = e.what();
    b.unsupported = e.status() == MT_ERROR_UNSUPPORTED;
  } catch (const std::exception& e) {
    b.module.reset();
    b.error = e.what();
  } catch (...) {
    b.module.reset();
    b.error = "unknown exception while building";
  }
  b.seconds = seconds_since(t0);
  return b;
}

MeasureResult build_failure(const Built& b) {
  MeasureResult r;
  r.status = b.unsupported ? MeasureStatus::Unsupported : MeasureStatus::BuildError;
  r.error = b.error;
  r.build_seconds = b.seconds;
  return r;
}

MeasureResult run_candidate(const PluginModule& module, const Reference& ref,
                            const MeasureOptions& options, ColdInputs* cold) {
  MeasureResult r;
  std::vector<NDArray> args = ref.fresh_args();
  std::vector<NDArray*> ptrs = pointers(args);
  try {
    // Cold inputs take the weights as given: each call reads the next copy of them.
    const PackedWeights packed(module, cold ? std::vector<bool>{} : options.weights, args, ptrs);
    r.packed_args = static_cast<int>(packed.count());
    int warmups = std::max(options.warmup_runs, options.check ? 1 : 0);
    for (int w = 0; w < warmups; ++w) {
      packed.run(module, ptrs);
      if (w != 0 || !options.check) continue;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!ref.is_output[i]) continue;
        std::string why;
        double atol = options.atol;
        if (options.atol_of_largest > 0) {
          const double largest = max_abs(ref.args[i]);
          if (std::isfinite(largest)) atol = std::max(atol, options.atol_of_largest * largest);
        }
        if (!allclose(args[i], ref.args[i], options.rtol, atol, &why)) {
          r.status = MeasureStatus::WrongResult;
          r.error = "output " + std::to_string(i) + ": " + why;
          return r;
        }
      }
    }
    auto timed = [&](int repeats) {
      return packed.time(module, ptrs, repeats, options.min_repeat_seconds);
    };
    if (cold) {
      r.run_secs = cold->time(module, args, options.repeats, options.min_repeat_seconds);
    } else if (options.flush_cache) {
      for (int k = 0; k < options.repeats; ++k) {
        flush_caches();
        std::vector<double> t = timed(1);
        r.run_secs.insert(r.run_secs.end(), t.begin(), t.end());
      }
    } else if (options.repeats > 0) {
      r.run_secs = timed(options.repeats);
    }
  } catch (const std::exception& e) {
    r.status = MeasureStatus::RunError;
    r.error = e.what();
    r.run_secs.clear();
  } catch (...) {
    r.status = MeasureStatus::RunError;
    r.error = "unknown exception while running";
    r.run_secs.clear();
  }
  return r;
}

std::string signal_name(int sig) {
  switch (sig) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGFPE:
    return "SIGFPE";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGABRT:
    return "SIGABRT";
  case SIGKILL:
    return "SIGKILL";
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGTRAP:
    return "SIGTRAP";
  case SIGPIPE:
    return "SIGPIPE";
  case SIGSYS:
    return "SIGSYS";
  case SIGXCPU:
    return "SIGXCPU";
  default:
    return "signal " + std::to_string(sig);
  }
}

// ---- wire format ---------------------------------------------------------------------------

namespace {

template <typename T> void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T> T get(const std::string& in, size_t& pos) {
  if (pos + sizeof(T) > in.size()) throw std::runtime_error("measurement worker: truncated answer");
  T v;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}

} // namespace

std::string encode_frame(char tag, const std::string& payload) {
  std::string out(1, tag);
  put<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  out += payload;
  return out;
}

std::string encode_built(double build_seconds) {
  std::string p;
  put<double>(p, build_seconds);
  return encode_frame(kTagBuilt, p);
}

std::string encode_result(const MeasureResult& r) {
  std::string p;
  put<int32_t>(p, static_cast<int32_t>(r.status));
  put<double>(p, r.build_seconds);
  // A message is for people: a few kilobytes say all there is to say.
  std::string msg = r.error.substr(0, 8192);
  put<uint32_t>(p, static_cast<uint32_t>(msg.size()));
  p += msg;
  put<uint32_t>(p, static_cast<uint32_t>(r.run_secs.size()));
  for (double t : r.run_secs)
    put<double>(p, t);
  put<int32_t>(p, r.packed_args);
  return encode_frame(kTagResult, p);
}

std::string encode_log(int level, std::string_view message) {
  std::string p;
  put<int32_t>(p, static_cast<int32_t>(level));
  p += message.substr(0, 8192);
  return encode_frame(kTagLog, p);
}

std::optional<std::pair<char, std::string>> take_frame(std::string& buffer) {
  if (buffer.size() < 5) return std::nullopt;
  uint32_t len;
  std::memcpy(&len, buffer.data() + 1, 4);
  if (buffer.size() < 5 + static_cast<size_t>(len)) return std::nullopt;
  std::pair<char, std::string> f{buffer[0], buffer.substr(5, len)};
  buffer.erase(0, 5 + static_cast<size_t>(len));
  return f;
}

double decode_built(const std::string& payload) {
  size_t pos = 0;
  return get<double>(payload, pos);
}

MeasureResult decode_result(const std::string& payload) {
  size_t pos = 0;
  MeasureResult r;
  int32_t status = get<int32_t>(payload, pos);
  if (status < 0 || status > static_cast<int32_t>(MeasureStatus::Unsupported))
    throw std::runtime_error("measurement worker: bad status " + std::to_string(status));
  r.status = static_cast<MeasureStatus>(status);
  r.build_seconds = get<double>(payload, pos);
  uint32_t n = get<uint32_t>(payload, pos);
  if (pos + n > payload.size()) throw std::runtime_error("measurement worker: truncated answer");
  r.error = payload.substr(pos, n);
  pos += n;
  uint32_t k = get<uint32_t>(payload, pos);
  for (uint32_t i = 0; i < k; ++i)
    r.run_secs.push_back(get<double>(payload, pos));
  r.packed_args = get<int32_t>(payload, pos);
  return r;
}

std::pair<int, std::string> decode_log(const std::string& payload) {
  size_t pos = 0;
  int level = get<int32_t>(payload, pos);
  return {level, payload.substr(pos)};
}

} // namespace mt::measure_detail
