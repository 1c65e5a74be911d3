// cuda_driver.h: the CUDA driver API (libcuda.so.1) as the CUDA target plugin needs it --
// device properties for the search space, and compile-load-launch-time for measurement.
//
// libcuda is opened at run time with dlopen, so the plugin loads on machines with no driver
// and CudaDriver::get() answers "no CUDA device (...)" there. Every failing CUresult becomes a
// CudaError (a std::runtime_error) naming the call and the error: "cuLaunchKernel:
// CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)".
//
// CUDA is not fork-safe once initialised: a process that forks measurement workers should
// learn about devices through query_devices_in_child() and leave CudaDriver::get() to the
// workers.
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

// The driver's opaque handle types, under the tags cuda.h gives them (see cuda_abi.h).
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;

namespace mt::cuda {

using DevicePtr = unsigned long long; // CUdeviceptr

// A CUresult other than CUDA_SUCCESS. code() is the CUresult, for callers that must tell a
// sticky launch fault (the context is dead, the worker should exit) from a bad argument.
class CudaError : public std::runtime_error {
public:
  CudaError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

private:
  int code_;
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int max_grid_dim[3] = {0, 0, 0};
  int warp_size = 0;
  int64_t shared_memory_per_block = 0;       // without opt-in (48 KiB)
  int64_t shared_memory_per_block_optin = 0; // with cuFuncSetAttribute opt-in
  int64_t shared_memory_per_sm = 0;
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int clock_khz = 0;        // 0 where the driver no longer reports it
  int memory_clock_khz = 0; // 0 where the driver no longer reports it
  int memory_bus_width = 0; // bits
  // "sm_90": the NVRTC --gpu-architecture for this device.
  std::string arch() const;
};

// DeviceInfo as JSON (an array of objects whose keys are the member names) and back; the
// format query_devices_in_child() returns. devices_from_json throws std::runtime_error on
// malformed input.
std::string devices_to_json(const std::vector<DeviceInfo>& devices);
std::vector<DeviceInfo> devices_from_json(const std::string& json);

class CudaDriver {
public:
  // The process-wide driver: dlopen(libcuda.so.1) ($METATUNE_CUDA_DRIVER_LIBRARY overrides the
  // name), cuInit(0), at least one device. Loaded once (thread-safe). nullptr when unusable;
  // *why then starts with "no CUDA device (" and says which step failed.
  static CudaDriver* get(std::string* why);
  // Whether cuInit has succeeded in this process, i.e. whether forking is now unsafe for CUDA.
  static bool initialised_in_this_process();

  int driver_version() const; // cuDriverGetVersion: 13000 for CUDA 13.0
  int device_count() const;
  DeviceInfo device_info(int ordinal) const;
  std::vector<DeviceInfo> devices() const;

  // "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)".
  std::string describe(int cu_result) const;
  // Throws CudaError("<call>: <describe(cu_result)>[ <detail>]") unless cu_result is
  // CUDA_SUCCESS.
  void check(int cu_result, const char* call, const std::string& detail = {}) const;

  struct Api; // the resolved entry points (cuda_driver.cpp)
  const Api& api() const { return *api_; }

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

private:
  friend std::optional<std::string> query_devices_in_child(std::string*, std::chrono::milliseconds);
  // Opens and initialises a driver without touching the singleton (the forked child uses it).
  static std::unique_ptr<CudaDriver> load(std::string* why);
  CudaDriver(std::unique_ptr<Api> api, int device_count);

  std::unique_ptr<Api> api_;
  int device_count_;
};

// The tensor map (CUtensorMap's 128 bytes) of a 16-bit tensor at device address `base` for
// TMA box copies with the 128-byte swizzle: `dims` elements and `box` extents innermost first,
// `strides_bytes` between steps of dims 1.. (the generator's tensor_map.hpp). Throws CudaError
// where the driver has no cuTensorMapEncodeTiled or rejects the description.
std::array<uint64_t, 16> encode_tensor_map(const CudaDriver& driver, DevicePtr base, bool bf16,
                                           const std::vector<uint64_t>& dims,
                                           const std::vector<uint64_t>& strides_bytes,
                                           const std::vector<uint32_t>& box);

// Forks; the child opens and initialises the driver and sends back devices_to_json() of every
// device; the parent waits at most `timeout`. The parent never initialises CUDA. When the
// parent already has (initialised_in_this_process()), a forked child could not use CUDA, so
// the devices are queried in this process instead. nullopt when there is no usable device:
// *why then starts with "no CUDA device (".
std::optional<std::string>
query_devices_in_child(std::string* why,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20));

class DeviceBuffer;
class Function;

// The device's primary context (the one the CUDA runtime would share), retained for the
// object's lifetime. Every operation below first makes it current on the calling thread, so
// a Context may be used from any thread. Buffers, modules and events made from a Context must
// not outlive it.
class Context {
public:
  Context(const CudaDriver& driver, int ordinal);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const CudaDriver& driver() const { return *driver_; }
  const DeviceInfo& device() const { return info_; }
  CUctx_st* handle() const { return context_; }
  void make_current() const;
  void synchronize() const; // cuCtxSynchronize: where asynchronous kernel faults surface

  // cuLaunchKernel on the default stream. params[i] points at the value of kernel argument
  // i (for a buffer: buffer.kernel_param()); the driver copies the values at launch.
  // The launch gives the kernel the dynamic shared memory it was set up for
  // (Function::use_dynamic_shared).
  void launch(const Function& function, const std::array<unsigned, 3>& grid,
              const std::array<unsigned, 3>& block, const std::vector<void*>& params) const;

  // Evicts the L2 cache before a cold-cache measurement: writes 2 x l2_bytes of device memory
  // (allocated on first use, freed with the Context), in stream order before the next launch.
  void flush_l2();

private:
  const CudaDriver* driver_;
  int device_ = 0; // CUdevice
  CUctx_st* context_ = nullptr;
  DeviceInfo info_;
  std::unique_ptr<DeviceBuffer> flush_buffer_;
  unsigned flush_value_ = 0;
};

class DeviceBuffer {
public:
  DeviceBuffer(const Context& context, std::size_t bytes); // cuMemAlloc; 0 bytes: null pointer
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr ptr() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  // The address of the device pointer, as Context::launch takes it. Moving the buffer
  // invalidates it.
  void* kernel_param() { return &ptr_; }

  // Synchronous copies; throw std::out_of_range past size().
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0);
  void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void fill(std::uint8_t value); // cuMemsetD8 over the whole buffer

  template <class T> void upload(const std::vector<T>& v) {
    upload(v.data(), v.size() * sizeof(T));
  }
  template <class T> void download(std::vector<T>& v) const {
    download(v.data(), v.size() * sizeof(T));
  }

private:
  void reset() noexcept;

  const Context* context_;
  DevicePtr ptr_ = 0;
  std::size_t bytes_ = 0;
};

// A kernel of a loaded Module; valid while the Module lives.
class Function {
public:
  Function() = default;
  CUfunc_st* handle() const { return handle_; }
  const std::string& name() const { return name_; }
  explicit operator bool() const { return handle_ != nullptr; }
  // Opts the kernel into `bytes` of dynamic shared memory (cuFuncSetAttribute; beyond 48 KB
  // the driver refuses a launch without it) and launches it with them from now on. Throws
  // when the device's opt-in limit is smaller.
  void use_dynamic_shared(const Context& context, unsigned bytes);
  unsigned dynamic_shared_bytes() const { return dynamic_shared_bytes_; }

private:
  friend class Module;
  CUfunc_st* handle_ = nullptr;
  std::string name_;
  unsigned dynamic_shared_bytes_ = 0;
};

// A CUBIN (or PTX) image loaded into a Context with cuModuleLoadData.
class Module {
public:
  Module(const Context& context, const std::vector<char>& image);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // cuModuleGetFunction; kernels compiled from C++ need extern "C" to be found by their name.
  Function function(const std::string& name) const;

private:
  void reset() noexcept;

  const Context* context_;
  CUmod_st* module_ = nullptr;
};

// A timing event on the default stream.
class Event {
public:
  explicit Event(const Context& context);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record();
  void synchronize() const;
  // Milliseconds between two recorded events; waits for `end` first.
  static float elapsed_ms(const Event& start, const Event& end);

private:
  void reset() noexcept;

  const Context* context_;
  CUevent_st* event_ = nullptr;
};

} // namespace mt::cuda
