// Copies of a workload's inputs spread over more memory than the caches hold (see
// cold_inputs.h).
#include "core/measure/cold_inputs.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/measure/measure.h"
#include "core/plugin/plugin_components.h"

namespace mt {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMaxCopies = 4096;
constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// "32768K", "300M", "1G" -> bytes; 0 when unreadable.
size_t parse_cache_size(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
  case 'K':
    return static_cast<size_t>(v) << 10;
  case 'M':
    return static_cast<size_t>(v) << 20;
  case 'G':
    return static_cast<size_t>(v) << 30;
  default:
    return static_cast<size_t>(v);
  }
}

// The largest cache of cpu0 that sysfs describes (the last level); 0 when it describes none.
size_t last_level_cache_bytes() {
  size_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string s;
    if (!(f >> s)) continue;
    largest = std::max(largest, parse_cache_size(s));
  }
  return largest;
}

// One copy's bytes: the inputs, each from a 64-byte boundary.
size_t padded_input_bytes(const std::vector<NDArray>& args, const std::vector<bool>& is_output) {
  size_t bytes = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (!is_output[i]) bytes += round_up(args[i].nbytes());
  return bytes;
}

size_t physical_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

} // namespace

bool memory_bound(const Function& workload, double flops) {
  std::vector<bool> out = workload.output_mask();
  double bytes = 0;
  for (size_t i = 0; i < workload.params.size(); ++i)
    if (!out[i])
      bytes += static_cast<double>(workload.params[i]->num_elements()) *
               workload.params[i]->dtype.bytes();
  return bytes > 0 && flops < kColdInputsFlopsPerByte * bytes;
}

const char* to_string(ColdPolicy p) {
  switch (p) {
  case ColdPolicy::off:
    return "off";
  case ColdPolicy::on:
    return "on";
  case ColdPolicy::memory_bound:
    return "memory-bound";
  }
  return "?";
}

std::optional<ColdPolicy> parse_cold_policy(const std::string& s) {
  for (ColdPolicy p : {ColdPolicy::off, ColdPolicy::on, ColdPolicy::memory_bound})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

ColdPolicy cold_policy_of(const std::optional<std::string>& setting, const std::string& db_path) {
  if (!setting) return ColdPolicy::off;
  if (std::optional<ColdPolicy> p = parse_cold_policy(*setting)) return *p;
  throw std::runtime_error(db_path + ": its records were timed with cold inputs '" + *setting +
                           "', which this metatune does not know (off, on, memory-bound); "
                           "written by a newer metatune?");
}

bool cold_inputs_under(ColdPolicy policy, const Function& workload, double flops) {
  return policy == ColdPolicy::on ||
         (policy == ColdPolicy::memory_bound && memory_bound(workload, flops));
}

size_t default_cold_span_bytes() {
  size_t llc = last_level_cache_bytes();
  if (llc == 0) return size_t{256} << 20;
  return std::max(2 * llc, size_t{64} << 20);
}

void ColdInputs::FreeDeleter::operator()(unsigned char* p) const {
  std::free(p);
}

ColdInputs::ColdInputs(const std::vector<NDArray>& args, const std::vector<bool>& is_output,
                       size_t span_bytes)
    : is_output_(is_output) {
  if (span_bytes == 0) span_bytes = default_cold_span_bytes();
  input_bytes_ = padded_input_bytes(args, is_output_);
  size_t n = input_bytes_ == 0 ? 1 : (span_bytes + input_bytes_ - 1) / input_bytes_;
  n = std::clamp<size_t>(n, 2, kMaxCopies);
  if (size_t memory = physical_memory_bytes(); memory > 0 && input_bytes_ > 0)
    n = std::max<size_t>(1, std::min(n, memory / 4 / input_bytes_));
  // On huge pages where the kernel allows: a forked worker maps the copies anew on first
  // touch, page by page -- with 4-KiB pages that cost its first pass over 600 MB about 100 ms
  // and made the first calls' times a measurement of page faults; with 2-MiB pages, 2 ms.
  const size_t total =
      (std::max<size_t>(1, n * input_bytes_) + kHugePage - 1) / kHugePage * kHugePage;
  storage_.reset(static_cast<unsigned char*>(std::aligned_alloc(kHugePage, total)));
  if (!storage_) throw std::bad_alloc();
  ::madvise(storage_.get(), total, MADV_HUGEPAGE); // advice: without it, 4-KiB pages
  // Copy-major: one call's inputs lie together, and the copies are taken in address order.
  unsigned char* p = storage_.get();
  copies_.resize(n);
  for (size_t c = 0; c < n; ++c) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (is_output_[i]) continue;
      std::memcpy(p, args[i].data(), args[i].nbytes());
      copies_[c].emplace_back(args[i].dtype(), args[i].shape(), p);
      p += round_up(args[i].nbytes());
    }
  }
}

bool ColdInputs::holds(const std::vector<NDArray>& args, const std::vector<bool>& is_output) const {
  if (is_output != is_output_ || copies_.empty()) return false;
  size_t k = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_output[i]) continue;
    const NDArray& c = copies_[0].at(k++);
    if (c.dtype() != args[i].dtype() || c.shape() != args[i].shape() ||
        std::memcmp(c.data(), args[i].data(), c.nbytes()) != 0)
      return false;
  }
  return true;
}

std::vector<NDArray*> ColdInputs::arguments(size_t i, std::vector<NDArray>& outputs) {
  std::vector<NDArray>& copy = copies_[i % copies_.size()];
  std::vector<NDArray*> p(outputs.size());
  size_t k = 0;
  for (size_t a = 0; a < outputs.size(); ++a)
    p[a] = is_output_[a] ? &outputs[a] : &copy[k++];
  return p;
}

std::vector<double> ColdInputs::time(const PluginModule& module, std::vector<NDArray>& outputs,
                                     int repeats, double min_repeat_seconds) {
  using Clock = std::chrono::steady_clock;
  // The argument lists made before the clock starts: the timed loop only calls.
  std::vector<std::vector<NDArray*>> lists(copies_.size());
  for (size_t c = 0; c < copies_.size(); ++c)
    lists[c] = arguments(c, outputs);
  std::vector<double> secs;
  for (int r = 0; r < repeats; ++r) {
    size_t calls = 0;
    double elapsed = 0;
    const auto t0 = Clock::now();
    do {
      module.run(lists[next_]);
      next_ = (next_ + 1) % lists.size();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < min_repeat_seconds);
    secs.push_back(elapsed / static_cast<double>(calls));
  }
  return secs;
}

namespace {
std::mutex g_cold_mutex;
std::shared_ptr<ColdInputs> g_cold;
size_t g_cold_span = 0;
} // namespace

std::shared_ptr<ColdInputs> cold_inputs_for(const Reference& ref, size_t span_bytes) {
  std::lock_guard<std::mutex> lk(g_cold_mutex);
  if (g_cold && g_cold_span == span_bytes && g_cold->holds(ref.args, ref.is_output))
    return g_cold;
  g_cold.reset(); // one set at a time: free the last before making the next
  const size_t input_bytes = padded_input_bytes(ref.args, ref.is_output);
  if (size_t memory = physical_memory_bytes(); memory > 0 && 2 * input_bytes > memory / 4) {
    spdlog::warn("cold inputs: two copies of this workload's inputs ({} MB) would take more "
                 "than a quarter of the memory; timed on one set",
                 2 * input_bytes >> 20);
    return nullptr;
  }
  g_cold = std::make_shared<ColdInputs>(ref.args, ref.is_output, span_bytes);
  g_cold_span = span_bytes;
  return g_cold;
}

void release_cold_inputs() {
  std::lock_guard<std::mutex> lk(g_cold_mutex);
  g_cold.reset();
}

} // namespace mt
