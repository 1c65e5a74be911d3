// hip_runtime.h: the HIP runtime (libamdhip64) as the rocm target needs it -- device properties
// for the search space, and load-launch-time for measurement.
//
// libamdhip64 is opened at run time with dlopen, so the plugin loads on machines without ROCm
// and HipRuntime::get() answers "no ROCm device (...)" there. Every failing hipError_t becomes a
// HipError naming the call and the error: "hipModuleLaunchKernel: hipErrorLaunchFailure (...)".
// Like CUDA, the runtime is not fork-safe once initialised: a process that forks measurement
// workers learns about devices through query_devices_in_child().
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mt::rocm {

class HipError : public std::runtime_error {
public:
  HipError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

private:
  int code_;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string arch; // "gfx90a" (from the KFD topology's gfx_target_version), "" if unknown
  int compute_units = 0;
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int wavefront_size = 0; // 64 on CDNA, 32 on RDNA
  int64_t lds_bytes_per_block = 0;
  int registers_per_block = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int clock_khz = 0;
};

// JSON (an array of objects keyed by the member names) and back; what the child sends.
std::string devices_to_json(const std::vector<DeviceInfo>& devices);
std::vector<DeviceInfo> devices_from_json(const std::string& json); // throws std::runtime_error

// "gfx90a" from a KFD gfx_target_version (90010: major 9, minor 0, stepping 10 in hex).
std::string arch_from_gfx_target_version(int64_t version);

// The gfx target of each GPU node (simd_count > 0) of the KFD topology, in node order; empty
// where there is no KFD (no AMD GPU driver). A parameter so that tests can give a fake tree.
std::vector<std::string>
kfd_gpu_archs(const std::string& nodes_dir = "/sys/class/kfd/kfd/topology/nodes");

class HipRuntime {
public:
  // The process-wide runtime: dlopen of $METATUNE_HIP_LIBRARY, libamdhip64.so.5,
  // libamdhip64.so.6, libamdhip64.so; at least one device. nullptr with *why starting
  // "no ROCm device (" otherwise ("... (libamdhip64.so.5 not found: ...)", "... (hipGetDeviceCount:
  // hipErrorNoDevice)").
  static HipRuntime* get(std::string* why);
  // Opens and initialises a runtime without touching the singleton (the forked child uses it).
  static std::unique_ptr<HipRuntime> load(std::string* why);

  int device_count() const;
  DeviceInfo device_info(int ordinal) const;
  std::vector<DeviceInfo> devices() const;
  std::string describe(int hip_error) const; // "hipErrorNoDevice (no ROCm-capable device ...)"
  void check(int hip_error, const char* call, const std::string& detail = {}) const;

  struct Api; // resolved entry points (hip_runtime.cpp)
  const Api& api() const { return *api_; }
  ~HipRuntime();
  HipRuntime(const HipRuntime&) = delete;
  HipRuntime& operator=(const HipRuntime&) = delete;

private:
  HipRuntime(std::unique_ptr<Api> api, int device_count);
  std::unique_ptr<Api> api_;
  int device_count_ = 0;
};

// Forks; the child loads the runtime and sends devices_to_json of every device. nullopt with
// *why starting "no ROCm device (" when there is none.
std::optional<std::string> query_devices_in_child(
    std::string* why, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// The device used by this process (hipSetDevice before every call, so any thread may use it).
class Device {
public:
  Device(const HipRuntime& runtime, int ordinal);
  ~Device(); // frees the L2 flush buffer
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  const HipRuntime& runtime() const { return *runtime_; }
  const DeviceInfo& info() const { return info_; }
  void make_current() const;
  void synchronize() const; // hipDeviceSynchronize: where kernel faults surface
  // hipModuleLaunchKernel on the null stream; params[i] points at kernel argument i's value.
  void launch(void* function, const std::array<unsigned, 3>& grid,
              const std::array<unsigned, 3>& block, const std::vector<void*>& params) const;
  // Evicts the L2 cache before a repeat (writes 2 x l2_bytes of device memory).
  void flush_l2();

private:
  const HipRuntime* runtime_;
  int ordinal_;
  DeviceInfo info_;
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
};

class DeviceBuffer {
public:
  DeviceBuffer(const Device& device, size_t bytes); // hipMalloc (at least 1 byte)
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(const DeviceBuffer&) = delete;
  void upload(const void* src, size_t bytes);
  void download(void* dst, size_t bytes) const;
  void* kernel_param() { return &ptr_; } // the address of the device pointer
  size_t size() const { return bytes_; }

private:
  const Device* device_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A code object loaded with hipModuleLoadData.
class Module {
public:
  Module(const Device& device, const std::vector<char>& code_object);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  void* function(const std::string& name) const; // hipModuleGetFunction; throws naming it

private:
  const Device* device_;
  void* module_ = nullptr;
};

// Timing events on the null stream.
class Event {
public:
  explicit Event(const Device& device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record();
  static float elapsed_ms(const Event& start, const Event& end); // waits for end

private:
  const Device* device_;
  void* event_ = nullptr;
};

} // namespace mt::rocm
