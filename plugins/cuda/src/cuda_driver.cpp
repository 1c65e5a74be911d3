// cuda_driver.cpp: libcuda through dlopen/dlsym, the RAII wrappers over it, and the forked
// device query (see cuda_driver.h).
#include "cuda_driver.h"

#include "cuda_abi.h"
#include "metatune/sdk/child_query.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace mt::cuda {

struct CudaDriver::Api {
  abi::PFN_cuGetErrorName get_error_name = nullptr;     // optional: names from cuda_abi.h
  abi::PFN_cuGetErrorString get_error_string = nullptr; // optional
  abi::PFN_cuInit init = nullptr;
  abi::PFN_cuDriverGetVersion driver_get_version = nullptr;
  abi::PFN_cuDeviceGetCount device_get_count = nullptr;
  abi::PFN_cuDeviceGet device_get = nullptr;
  abi::PFN_cuDeviceGetName device_get_name = nullptr;
  abi::PFN_cuDeviceTotalMem_v2 device_total_mem = nullptr;
  abi::PFN_cuDeviceGetAttribute device_get_attribute = nullptr;
  abi::PFN_cuDevicePrimaryCtxRetain primary_ctx_retain = nullptr;
  abi::PFN_cuDevicePrimaryCtxRelease_v2 primary_ctx_release = nullptr;
  abi::PFN_cuCtxSetCurrent ctx_set_current = nullptr;
  abi::PFN_cuCtxSynchronize ctx_synchronize = nullptr;
  abi::PFN_cuModuleLoadData module_load_data = nullptr;
  abi::PFN_cuModuleUnload module_unload = nullptr;
  abi::PFN_cuModuleGetFunction module_get_function = nullptr;
  abi::PFN_cuFuncSetAttribute func_set_attribute = nullptr;
  abi::PFN_cuMemAlloc_v2 mem_alloc = nullptr;
  abi::PFN_cuMemFree_v2 mem_free = nullptr;
  abi::PFN_cuMemcpyHtoD_v2 memcpy_htod = nullptr;
  abi::PFN_cuMemcpyDtoH_v2 memcpy_dtoh = nullptr;
  abi::PFN_cuMemsetD8_v2 memset_d8 = nullptr;
  abi::PFN_cuLaunchKernel launch_kernel = nullptr;
  abi::PFN_cuEventCreate event_create = nullptr;
  abi::PFN_cuEventRecord event_record = nullptr;
  abi::PFN_cuEventSynchronize event_synchronize = nullptr;
  abi::PFN_cuEventElapsedTime event_elapsed_time = nullptr;
  abi::PFN_cuEventDestroy_v2 event_destroy = nullptr;
  abi::PFN_cuTensorMapEncodeTiled tensor_map_encode_tiled = nullptr; // null before CUDA 12
};

// Found by nlohmann::json through argument-dependent lookup, hence in DeviceInfo's namespace
// (and ahead of every use: json's traits are fixed at their first instantiation).
void to_json(nlohmann::json& j, const DeviceInfo& d) {
  j = nlohmann::json{
      {"ordinal", d.ordinal},
      {"name", d.name},
      {"arch", d.arch()},
      {"cc_major", d.cc_major},
      {"cc_minor", d.cc_minor},
      {"sm_count", d.sm_count},
      {"max_threads_per_block", d.max_threads_per_block},
      {"max_block_dim", {d.max_block_dim[0], d.max_block_dim[1], d.max_block_dim[2]}},
      {"max_grid_dim", {d.max_grid_dim[0], d.max_grid_dim[1], d.max_grid_dim[2]}},
      {"warp_size", d.warp_size},
      {"shared_memory_per_block", d.shared_memory_per_block},
      {"shared_memory_per_block_optin", d.shared_memory_per_block_optin},
      {"shared_memory_per_sm", d.shared_memory_per_sm},
      {"regs_per_block", d.regs_per_block},
      {"regs_per_sm", d.regs_per_sm},
      {"l2_bytes", d.l2_bytes},
      {"global_memory_bytes", d.global_memory_bytes},
      {"clock_khz", d.clock_khz},
      {"memory_clock_khz", d.memory_clock_khz},
      {"memory_bus_width", d.memory_bus_width},
  };
}

void from_json(const nlohmann::json& j, DeviceInfo& d) {
  j.at("ordinal").get_to(d.ordinal);
  j.at("name").get_to(d.name);
  j.at("cc_major").get_to(d.cc_major);
  j.at("cc_minor").get_to(d.cc_minor);
  j.at("sm_count").get_to(d.sm_count);
  j.at("max_threads_per_block").get_to(d.max_threads_per_block);
  for (int i = 0; i < 3; ++i) {
    j.at("max_block_dim").at(i).get_to(d.max_block_dim[i]);
    j.at("max_grid_dim").at(i).get_to(d.max_grid_dim[i]);
  }
  j.at("warp_size").get_to(d.warp_size);
  j.at("shared_memory_per_block").get_to(d.shared_memory_per_block);
  j.at("shared_memory_per_block_optin").get_to(d.shared_memory_per_block_optin);
  j.at("shared_memory_per_sm").get_to(d.shared_memory_per_sm);
  j.at("regs_per_block").get_to(d.regs_per_block);
  j.at("regs_per_sm").get_to(d.regs_per_sm);
  j.at("l2_bytes").get_to(d.l2_bytes);
  j.at("global_memory_bytes").get_to(d.global_memory_bytes);
  j.at("clock_khz").get_to(d.clock_khz);
  j.at("memory_clock_khz").get_to(d.memory_clock_khz);
  j.at("memory_bus_width").get_to(d.memory_bus_width);
}

namespace {

// Set once cuInit succeeds anywhere in this process; from then on a forked child must not
// touch CUDA.
std::atomic<bool> g_initialised{false};

template <class Fn> bool resolve(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return out != nullptr;
}

// The first of several exported spellings: cuda.h maps some API names to versioned symbols
// (cuEventElapsedTime -> cuEventElapsedTime_v2 since 12.8), and older drivers export only the
// plain one.
template <class Fn>
bool resolve_any(void* handle, std::initializer_list<const char*> symbols, Fn& out) {
  for (const char* s : symbols)
    if (resolve(handle, s, out)) return true;
  return false;
}

std::string describe_with(const CudaDriver::Api& api, int code) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name && api.get_error_name(code, &name) != abi::CUDA_SUCCESS) name = nullptr;
  if (api.get_error_string && api.get_error_string(code, &text) != abi::CUDA_SUCCESS)
    text = nullptr;
  if (!name) name = abi::fallback_error_name(code);
  std::string out = name ? name : "CUresult " + std::to_string(code);
  if (text && *text) out += std::string(" (") + text + ")";
  return out;
}

} // namespace

// ------------------------------------------------------------------------------ DeviceInfo

std::string DeviceInfo::arch() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

std::string devices_to_json(const std::vector<DeviceInfo>& devices) {
  return nlohmann::json(devices).dump();
}

std::vector<DeviceInfo> devices_from_json(const std::string& json) {
  try {
    return nlohmann::json::parse(json).get<std::vector<DeviceInfo>>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("devices_from_json: ") + e.what());
  }
}

// ------------------------------------------------------------------------------ CudaDriver

CudaDriver::CudaDriver(std::unique_ptr<Api> api, int device_count)
    : api_(std::move(api)), device_count_(device_count) {}

// The dlopen handle is dropped, never closed: libcuda starts threads and registers handlers
// that outlive any object of ours, and unloading it buys nothing.
CudaDriver::~CudaDriver() = default;

std::unique_ptr<CudaDriver> CudaDriver::load(std::string* why) {
  auto fail = [&](std::string reason) -> std::unique_ptr<CudaDriver> {
    if (why) *why = "no CUDA device (" + reason + ")";
    return nullptr;
  };
  const char* env = std::getenv("METATUNE_CUDA_DRIVER_LIBRARY");
  const std::string library = env && *env ? env : "libcuda.so.1";
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    return fail(library + " not found: " + (e ? e : "unknown dlopen error"));
  }

  auto api = std::make_unique<Api>();
  const char* missing = nullptr;
  auto need = [&](std::initializer_list<const char*> symbols, auto& fn) {
    if (!resolve_any(handle, symbols, fn) && !missing) missing = *symbols.begin();
  };
  resolve(handle, "cuGetErrorName", api->get_error_name);
  resolve(handle, "cuGetErrorString", api->get_error_string);
  need({"cuInit"}, api->init);
  need({"cuDriverGetVersion"}, api->driver_get_version);
  need({"cuDeviceGetCount"}, api->device_get_count);
  need({"cuDeviceGet"}, api->device_get);
  need({"cuDeviceGetName"}, api->device_get_name);
  need({"cuDeviceTotalMem_v2"}, api->device_total_mem);
  need({"cuDeviceGetAttribute"}, api->device_get_attribute);
  need({"cuDevicePrimaryCtxRetain"}, api->primary_ctx_retain);
  need({"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, api->primary_ctx_release);
  need({"cuCtxSetCurrent"}, api->ctx_set_current);
  need({"cuCtxSynchronize"}, api->ctx_synchronize);
  need({"cuModuleLoadData"}, api->module_load_data);
  need({"cuModuleUnload"}, api->module_unload);
  need({"cuModuleGetFunction"}, api->module_get_function);
  need({"cuFuncSetAttribute"}, api->func_set_attribute);
  need({"cuMemAlloc_v2"}, api->mem_alloc);
  need({"cuMemFree_v2"}, api->mem_free);
  need({"cuMemcpyHtoD_v2"}, api->memcpy_htod);
  need({"cuMemcpyDtoH_v2"}, api->memcpy_dtoh);
  need({"cuMemsetD8_v2"}, api->memset_d8);
  need({"cuLaunchKernel"}, api->launch_kernel);
  need({"cuEventCreate"}, api->event_create);
  need({"cuEventRecord"}, api->event_record);
  need({"cuEventSynchronize"}, api->event_synchronize);
  need({"cuEventElapsedTime_v2", "cuEventElapsedTime"}, api->event_elapsed_time);
  need({"cuEventDestroy_v2"}, api->event_destroy);
  resolve(handle, "cuTensorMapEncodeTiled", api->tensor_map_encode_tiled);
  if (missing) {
    dlclose(handle);
    return fail(library + " lacks " + missing + ": the driver is too old");
  }

  // From here on libcuda stays loaded even on failure: cuInit may have started threads.
  if (int r = api->init(0); r != abi::CUDA_SUCCESS)
    return fail("cuInit: " + describe_with(*api, r));
  g_initialised = true;
  int count = 0;
  if (int r = api->device_get_count(&count); r != abi::CUDA_SUCCESS)
    return fail("cuDeviceGetCount: " + describe_with(*api, r));
  if (count <= 0) return fail("cuDeviceGetCount: 0 devices");
  return std::unique_ptr<CudaDriver>(new CudaDriver(std::move(api), count));
}

CudaDriver* CudaDriver::get(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<CudaDriver> instance;
  static std::string reason;
  std::call_once(once, [] { instance = load(&reason); });
  if (!instance && why) *why = reason;
  return instance.get();
}

bool CudaDriver::initialised_in_this_process() {
  return g_initialised.load();
}

int CudaDriver::driver_version() const {
  int v = 0;
  check(api_->driver_get_version(&v), "cuDriverGetVersion");
  return v;
}

int CudaDriver::device_count() const {
  return device_count_;
}

std::string CudaDriver::describe(int cu_result) const {
  return describe_with(*api_, cu_result);
}

void CudaDriver::check(int cu_result, const char* call, const std::string& detail) const {
  if (cu_result == abi::CUDA_SUCCESS) return;
  std::string message = std::string(call) + ": " + describe(cu_result);
  if (!detail.empty()) message += " " + detail;
  throw CudaError(message, cu_result);
}

DeviceInfo CudaDriver::device_info(int ordinal) const {
  const Api& api = *api_;
  abi::CUdevice dev = 0;
  check(api.device_get(&dev, ordinal), "cuDeviceGet", "[ordinal " + std::to_string(ordinal) + "]");
  auto attr = [&](abi::CUdevice_attribute a) {
    int v = 0;
    check(api.device_get_attribute(&v, a, dev), "cuDeviceGetAttribute",
          "[attribute " + std::to_string(a) + "]");
    return v;
  };
  // Attributes a driver may stop reporting (CUDA 13 dropped the clock rates from the runtime's
  // cudaDeviceProp): informative only, so 0 rather than a failed device query.
  auto attr_or_zero = [&](abi::CUdevice_attribute a) {
    int v = 0;
    return api.device_get_attribute(&v, a, dev) == abi::CUDA_SUCCESS ? v : 0;
  };

  DeviceInfo d;
  d.ordinal = ordinal;
  char name[256] = {};
  check(api.device_get_name(name, static_cast<int>(sizeof name) - 1, dev), "cuDeviceGetName");
  d.name = name;
  d.cc_major = attr(abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.cc_minor = attr(abi::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(abi::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.max_threads_per_block = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  d.max_block_dim[0] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  d.max_block_dim[1] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  d.max_block_dim[2] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  d.max_grid_dim[0] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  d.max_grid_dim[1] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  d.max_grid_dim[2] = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  d.warp_size = attr(abi::CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.shared_memory_per_block = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  d.shared_memory_per_block_optin =
      attr_or_zero(abi::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.shared_memory_per_sm = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.regs_per_block = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.regs_per_sm = attr(abi::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.l2_bytes = attr(abi::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  std::size_t total = 0;
  check(api.device_total_mem(&total, dev), "cuDeviceTotalMem_v2");
  d.global_memory_bytes = static_cast<int64_t>(total);
  d.clock_khz = attr_or_zero(abi::CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.memory_clock_khz = attr_or_zero(abi::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.memory_bus_width = attr_or_zero(abi::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  return d;
}

std::vector<DeviceInfo> CudaDriver::devices() const {
  std::vector<DeviceInfo> out;
  for (int i = 0; i < device_count_; ++i)
    out.push_back(device_info(i));
  return out;
}

// ------------------------------------------------------------------ query_devices_in_child

std::optional<std::string> query_devices_in_child(std::string* why,
                                                  std::chrono::milliseconds timeout) {
  auto fail = [&](std::string reason) -> std::optional<std::string> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };

  if (CudaDriver::initialised_in_this_process()) {
    std::string reason;
    CudaDriver* driver = CudaDriver::get(&reason);
    if (!driver) return fail(reason.empty() ? "no CUDA device (initialised elsewhere)" : reason);
    try {
      return devices_to_json(driver->devices());
    } catch (const std::exception& e) {
      return fail(std::string("no CUDA device (") + e.what() + ")");
    }
  }

  std::string reason;
  std::optional<std::string> answer = sdk::ask_forked_child(
      [] {
        std::string w;
        std::unique_ptr<CudaDriver> driver = CudaDriver::load(&w);
        if (!driver) throw std::runtime_error(w);
        return devices_to_json(driver->devices());
      },
      timeout, &reason);
  if (answer) return answer;
  return fail(reason.rfind("no CUDA device", 0) == 0
                  ? reason
                  : "no CUDA device (device query: " + reason + ")");
}

// --------------------------------------------------------------------------------- Context

Context::Context(const CudaDriver& driver, int ordinal) : driver_(&driver) {
  const CudaDriver::Api& api = driver.api();
  abi::CUdevice dev = 0;
  driver.check(api.device_get(&dev, ordinal), "cuDeviceGet",
               "[ordinal " + std::to_string(ordinal) + "]");
  device_ = dev;
  abi::CUcontext ctx = nullptr;
  driver.check(api.primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  context_ = ctx;
  try {
    make_current();
    info_ = driver.device_info(ordinal);
  } catch (...) {
    api.primary_ctx_release(dev);
    throw;
  }
}

Context::~Context() {
  flush_buffer_.reset(); // needs the context still retained
  driver_->api().primary_ctx_release(device_);
}

void Context::make_current() const {
  driver_->check(driver_->api().ctx_set_current(context_), "cuCtxSetCurrent");
}

void Context::synchronize() const {
  make_current();
  driver_->check(driver_->api().ctx_synchronize(), "cuCtxSynchronize");
}

void Context::launch(const Function& function, const std::array<unsigned, 3>& grid,
                     const std::array<unsigned, 3>& block, const std::vector<void*>& params) const {
  const unsigned dynamic_shared_bytes = function.dynamic_shared_bytes();
  if (!function) throw std::invalid_argument("Context::launch: no function");
  make_current();
  // cuLaunchKernel only reads the array; its C signature is just not const-correct.
  driver_->check(driver_->api().launch_kernel(function.handle(), grid[0], grid[1], grid[2],
                                              block[0], block[1], block[2], dynamic_shared_bytes,
                                              nullptr, const_cast<void**>(params.data()), nullptr),
                 "cuLaunchKernel", "[kernel " + function.name() + "]");
}

void Context::flush_l2() {
  if (!flush_buffer_) {
    std::size_t bytes = static_cast<std::size_t>(std::max<int64_t>(info_.l2_bytes, 1 << 20)) * 2;
    flush_buffer_ = std::make_unique<DeviceBuffer>(*this, bytes);
  }
  // A different value each time, so no layer can treat the write as a no-op.
  flush_buffer_->fill(static_cast<std::uint8_t>(++flush_value_));
}

// ---------------------------------------------------------------------------- DeviceBuffer

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes)
    : context_(&context), bytes_(bytes) {
  if (bytes == 0) return;
  context.make_current();
  abi::CUdeviceptr p = 0;
  context.driver().check(context.driver().api().mem_alloc(&p, bytes), "cuMemAlloc_v2",
                         "[" + std::to_string(bytes) + " bytes]");
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  reset();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(other.context_), ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = other.context_;
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// The resets drop errors: a destructor cannot throw, and after a sticky fault (an illegal
// address, say) every free fails anyway.
void DeviceBuffer::reset() noexcept {
  if (!ptr_) return;
  const CudaDriver::Api& api = context_->driver().api();
  api.ctx_set_current(context_->handle());
  api.mem_free(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void* src, std::size_t bytes, std::size_t offset) {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw std::out_of_range("DeviceBuffer::upload past the end of the buffer");
  if (bytes == 0) return;
  context_->make_current();
  context_->driver().check(context_->driver().api().memcpy_htod(ptr_ + offset, src, bytes),
                           "cuMemcpyHtoD_v2");
}

void DeviceBuffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw std::out_of_range("DeviceBuffer::download past the end of the buffer");
  if (bytes == 0) return;
  context_->make_current();
  context_->driver().check(context_->driver().api().memcpy_dtoh(dst, ptr_ + offset, bytes),
                           "cuMemcpyDtoH_v2");
}

void DeviceBuffer::fill(std::uint8_t value) {
  if (bytes_ == 0) return;
  context_->make_current();
  context_->driver().check(context_->driver().api().memset_d8(ptr_, value, bytes_),
                           "cuMemsetD8_v2");
}

// ---------------------------------------------------------------------------------- Module

Module::Module(const Context& context, const std::vector<char>& image) : context_(&context) {
  if (image.empty()) throw std::invalid_argument("Module: empty image");
  context.make_current();
  abi::CUmodule m = nullptr;
  context.driver().check(context.driver().api().module_load_data(&m, image.data()),
                         "cuModuleLoadData");
  module_ = m;
}

Module::~Module() {
  reset();
}

Module::Module(Module&& other) noexcept
    : context_(other.context_), module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = other.context_;
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

void Module::reset() noexcept {
  if (!module_) return;
  const CudaDriver::Api& api = context_->driver().api();
  api.ctx_set_current(context_->handle());
  api.module_unload(module_);
  module_ = nullptr;
}

Function Module::function(const std::string& name) const {
  context_->make_current();
  abi::CUfunction f = nullptr;
  context_->driver().check(context_->driver().api().module_get_function(&f, module_, name.c_str()),
                           "cuModuleGetFunction", "[function \"" + name + "\"]");
  Function out;
  out.handle_ = f;
  out.name_ = name;
  return out;
}

void Function::use_dynamic_shared(const Context& context, unsigned bytes) {
  if (!handle_) throw std::invalid_argument("Function::use_dynamic_shared: no function");
  const int64_t most = context.device().shared_memory_per_block_optin;
  if (most > 0 && static_cast<int64_t>(bytes) > most)
    throw CudaError("kernel " + name_ + " needs " + std::to_string(bytes) +
                        " bytes of shared memory, the device gives a block at most " +
                        std::to_string(most),
                    abi::CUDA_ERROR_INVALID_VALUE);
  context.make_current();
  context.driver().check(
      context.driver().api().func_set_attribute(
          handle_, abi::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
      "cuFuncSetAttribute",
      "[kernel " + name_ + ", " + std::to_string(bytes) + " bytes of dynamic shared memory]");
  dynamic_shared_bytes_ = bytes;
}

// ----------------------------------------------------------------------------------- Event

Event::Event(const Context& context) : context_(&context) {
  context.make_current();
  abi::CUevent e = nullptr;
  context.driver().check(context.driver().api().event_create(&e, abi::CU_EVENT_DEFAULT),
                         "cuEventCreate");
  event_ = e;
}

Event::~Event() {
  reset();
}

Event::Event(Event&& other) noexcept
    : context_(other.context_), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = other.context_;
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::reset() noexcept {
  if (!event_) return;
  const CudaDriver::Api& api = context_->driver().api();
  api.ctx_set_current(context_->handle());
  api.event_destroy(event_);
  event_ = nullptr;
}

void Event::record() {
  context_->make_current();
  context_->driver().check(context_->driver().api().event_record(event_, nullptr), "cuEventRecord");
}

void Event::synchronize() const {
  context_->make_current();
  context_->driver().check(context_->driver().api().event_synchronize(event_),
                           "cuEventSynchronize");
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0.f;
  end.context_->driver().check(
      end.context_->driver().api().event_elapsed_time(&ms, start.event_, end.event_),
      "cuEventElapsedTime");
  return ms;
}

} // namespace mt::cuda

namespace mt::cuda {

std::array<uint64_t, 16> encode_tensor_map(const CudaDriver& driver, DevicePtr base, bool bf16,
                                           const std::vector<uint64_t>& dims,
                                           const std::vector<uint64_t>& strides_bytes,
                                           const std::vector<uint32_t>& box) {
  const auto encode = driver.api().tensor_map_encode_tiled;
  if (!encode)
    throw CudaError("cuTensorMapEncodeTiled: the driver has none (CUDA 12 or newer needed)", 0);
  const auto rank = static_cast<unsigned>(dims.size());
  if (rank < 1 || rank > 5 || box.size() != rank || strides_bytes.size() + 1 != rank)
    throw CudaError("cuTensorMapEncodeTiled: a tensor map of rank " + std::to_string(rank) +
                        " with " + std::to_string(box.size()) + " box extents and " +
                        std::to_string(strides_bytes.size()) + " strides",
                    0);
  alignas(64) std::array<uint64_t, 16> map{};
  const std::vector<uint32_t> element_strides(rank, 1u);
  constexpr int kFloat16 = 6, kBFloat16 = 9, kSwizzle128 = 3, kL2Promotion128 = 2;
  driver.check(encode(map.data(), bf16 ? kBFloat16 : kFloat16, rank,
                      reinterpret_cast<void*>(static_cast<uintptr_t>(base)), dims.data(),
                      strides_bytes.data(), box.data(), element_strides.data(), 0, kSwizzle128,
                      kL2Promotion128, 0),
               "cuTensorMapEncodeTiled");
  return map;
}

} // namespace mt::cuda
