// hip_runtime.cpp: libamdhip64 through dlopen/dlsym, the RAII wrappers over it, the device's
// gfx target from the KFD topology, and the forked device query (see hip_runtime.h).
#include "hip_runtime.h"

#include "hip_abi.h"
#include "metatune/sdk/child_query.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <utility>

namespace mt::rocm {

struct HipRuntime::Api {
  abi::PFN_hipGetErrorName get_error_name = nullptr;     // optional: names from hip_abi.h
  abi::PFN_hipGetErrorString get_error_string = nullptr; // optional
  abi::PFN_hipInit init = nullptr;
  abi::PFN_hipGetDeviceCount get_device_count = nullptr;
  abi::PFN_hipDeviceGet device_get = nullptr;
  abi::PFN_hipDeviceGetName device_get_name = nullptr;
  abi::PFN_hipDeviceGetAttribute device_get_attribute = nullptr;
  abi::PFN_hipDeviceTotalMem device_total_mem = nullptr; // optional: the attribute is an int
  abi::PFN_hipSetDevice set_device = nullptr;
  abi::PFN_hipDeviceSynchronize device_synchronize = nullptr;
  abi::PFN_hipMalloc mem_alloc = nullptr;
  abi::PFN_hipFree mem_free = nullptr;
  abi::PFN_hipMemcpy mem_copy = nullptr;
  abi::PFN_hipMemset mem_set = nullptr;
  abi::PFN_hipModuleLoadData module_load_data = nullptr;
  abi::PFN_hipModuleUnload module_unload = nullptr;
  abi::PFN_hipModuleGetFunction module_get_function = nullptr;
  abi::PFN_hipModuleLaunchKernel module_launch_kernel = nullptr;
  abi::PFN_hipEventCreate event_create = nullptr;
  abi::PFN_hipEventRecord event_record = nullptr;
  abi::PFN_hipEventSynchronize event_synchronize = nullptr;
  abi::PFN_hipEventElapsedTime event_elapsed_time = nullptr;
  abi::PFN_hipEventDestroy event_destroy = nullptr;
};

// Found by nlohmann::json through argument-dependent lookup, hence in DeviceInfo's namespace
// (and ahead of every use: json's traits are fixed at their first instantiation).
void to_json(nlohmann::json& j, const DeviceInfo& d) {
  j = nlohmann::json{
      {"ordinal", d.ordinal},
      {"name", d.name},
      {"arch", d.arch},
      {"compute_units", d.compute_units},
      {"max_threads_per_block", d.max_threads_per_block},
      {"max_block_dim", {d.max_block_dim[0], d.max_block_dim[1], d.max_block_dim[2]}},
      {"wavefront_size", d.wavefront_size},
      {"lds_bytes_per_block", d.lds_bytes_per_block},
      {"registers_per_block", d.registers_per_block},
      {"l2_bytes", d.l2_bytes},
      {"global_memory_bytes", d.global_memory_bytes},
      {"clock_khz", d.clock_khz},
  };
}

void from_json(const nlohmann::json& j, DeviceInfo& d) {
  j.at("ordinal").get_to(d.ordinal);
  j.at("name").get_to(d.name);
  j.at("arch").get_to(d.arch);
  j.at("compute_units").get_to(d.compute_units);
  j.at("max_threads_per_block").get_to(d.max_threads_per_block);
  for (int i = 0; i < 3; ++i)
    j.at("max_block_dim").at(i).get_to(d.max_block_dim[i]);
  j.at("wavefront_size").get_to(d.wavefront_size);
  j.at("lds_bytes_per_block").get_to(d.lds_bytes_per_block);
  j.at("registers_per_block").get_to(d.registers_per_block);
  j.at("l2_bytes").get_to(d.l2_bytes);
  j.at("global_memory_bytes").get_to(d.global_memory_bytes);
  j.at("clock_khz").get_to(d.clock_khz);
}

namespace {

// A small decimal number (so that stol cannot throw).
bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Set once this process has opened libamdhip64 and called hipInit (whatever it answered): from
// then on a forked child must not touch HIP, whose runtime threads do not survive fork().
std::atomic<bool> g_initialised{false};

// Varies the L2 flush's byte, so that no layer can treat a repeat of the same write as a no-op.
std::atomic<unsigned> g_flush_value{0};

template <class Fn> bool resolve(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return out != nullptr;
}

std::string describe_with(const HipRuntime::Api& api, int code) {
  const char* name = api.get_error_name ? api.get_error_name(code) : nullptr;
  // hipGetErrorName calls every code it does not know "hipErrorUnknown".
  if (!name || (code != abi::hipErrorUnknown && std::strcmp(name, "hipErrorUnknown") == 0))
    name = abi::fallback_error_name(code);
  const char* text = api.get_error_string ? api.get_error_string(code) : nullptr;
  // ROCm 5.2 answers hipGetErrorString with the name again.
  if (!text || !*text || (name && std::strcmp(text, name) == 0) ||
      std::strcmp(text, "hipErrorUnknown") == 0)
    text = abi::fallback_error_text(code);
  std::string out = name ? name : "hipError_t " + std::to_string(code);
  if (text && *text) out += std::string(" (") + text + ")";
  return out;
}

// The GPU (simd_count > 0) nodes' gfx_target_version, by node number.
std::vector<std::string> read_kfd_gpu_archs(const std::string& nodes_dir) {
  namespace fs = std::filesystem;
  std::vector<std::pair<long, std::string>> gpus;
  std::error_code ec;
  for (fs::directory_iterator it(nodes_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string id = it->path().filename().string();
    if (!all_digits(id)) continue;
    std::ifstream in(it->path() / "properties");
    if (!in) continue;
    long long simd_count = 0, version = 0;
    std::string key;
    long long value = 0;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      if (!(fields >> key >> value)) continue;
      if (key == "simd_count") simd_count = value;
      if (key == "gfx_target_version") version = value;
    }
    if (simd_count > 0) gpus.emplace_back(std::stol(id), arch_from_gfx_target_version(version));
  }
  std::sort(gpus.begin(), gpus.end()); // numerically: node 10 after node 9
  std::vector<std::string> out;
  for (auto& g : gpus)
    out.push_back(std::move(g.second));
  return out;
}

// The KFD GPU index behind HIP's device `ordinal`, through the visibility masks HIP applies
// (ROCr's, then HIP's own); nullopt where a mask is not a list of indices (UUIDs, say).
std::optional<size_t> kfd_index_of(int ordinal, size_t gpus) {
  std::vector<size_t> visible(gpus);
  std::iota(visible.begin(), visible.end(), size_t{0});
  auto apply = [&](const char* var) {
    const char* mask = std::getenv(var);
    if (!mask) return true;
    std::vector<size_t> next;
    std::stringstream list(mask);
    for (std::string item; std::getline(list, item, ',');) {
      if (!all_digits(item)) return false;
      size_t i = std::stoul(item);
      if (i < visible.size()) next.push_back(visible[i]);
    }
    visible = std::move(next);
    return true;
  };
  if (!apply("ROCR_VISIBLE_DEVICES")) return std::nullopt;
  if (!apply(std::getenv("HIP_VISIBLE_DEVICES") ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES"))
    return std::nullopt;
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= visible.size()) return std::nullopt;
  return visible[static_cast<size_t>(ordinal)];
}

std::string arch_of_device(int ordinal) {
  const std::vector<std::string> archs = kfd_gpu_archs();
  if (archs.empty()) return {};
  // One kind of GPU (the usual machine): no ordinal mapping to get wrong.
  if (std::all_of(archs.begin(), archs.end(), [&](const std::string& a) { return a == archs[0]; }))
    return archs[0];
  std::optional<size_t> i = kfd_index_of(ordinal, archs.size());
  return i ? archs[*i] : std::string();
}

} // namespace

// ------------------------------------------------------------------------------ DeviceInfo

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

std::string arch_from_gfx_target_version(int64_t version) {
  if (version <= 0) return {};
  const int64_t major = version / 10000, minor = (version / 100) % 100, stepping = version % 100;
  char buf[64];
  std::snprintf(buf, sizeof buf, "gfx%lld%llx%llx", static_cast<long long>(major),
                static_cast<long long>(minor), static_cast<long long>(stepping));
  return buf;
}

std::vector<std::string> kfd_gpu_archs(const std::string& nodes_dir) {
  return read_kfd_gpu_archs(nodes_dir);
}

// ------------------------------------------------------------------------------ HipRuntime

HipRuntime::HipRuntime(std::unique_ptr<Api> api, int device_count)
    : api_(std::move(api)), device_count_(device_count) {}

// The dlopen handle is dropped, never closed: libamdhip64 starts threads and registers
// handlers that outlive any object of ours, and unloading it buys nothing.
HipRuntime::~HipRuntime() = default;

std::unique_ptr<HipRuntime> HipRuntime::load(std::string* why) {
  auto fail = [&](const std::string& reason) -> std::unique_ptr<HipRuntime> {
    if (why) *why = "no ROCm device (" + reason + ")";
    return nullptr;
  };
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("METATUNE_HIP_LIBRARY"); env && *env)
    candidates = {env}; // as asked, or not at all
  else
    candidates = {"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"};
  void* handle = nullptr;
  std::string library, not_found;
  for (const std::string& c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library = c;
      break;
    }
    const char* e = dlerror();
    not_found +=
        (not_found.empty() ? "" : "; ") + c + " not found: " + (e ? e : "unknown dlopen error");
  }
  if (!handle) return fail(not_found);

  auto api = std::make_unique<Api>();
  const char* missing = nullptr;
  auto need = [&](const char* symbol, auto& fn) {
    if (!resolve(handle, symbol, fn) && !missing) missing = symbol;
  };
  resolve(handle, "hipGetErrorName", api->get_error_name);
  resolve(handle, "hipGetErrorString", api->get_error_string);
  resolve(handle, "hipDeviceTotalMem", api->device_total_mem);
  need("hipInit", api->init);
  need("hipGetDeviceCount", api->get_device_count);
  need("hipDeviceGet", api->device_get);
  need("hipDeviceGetName", api->device_get_name);
  need("hipDeviceGetAttribute", api->device_get_attribute);
  need("hipSetDevice", api->set_device);
  need("hipDeviceSynchronize", api->device_synchronize);
  need("hipMalloc", api->mem_alloc);
  need("hipFree", api->mem_free);
  need("hipMemcpy", api->mem_copy);
  need("hipMemset", api->mem_set);
  need("hipModuleLoadData", api->module_load_data);
  need("hipModuleUnload", api->module_unload);
  need("hipModuleGetFunction", api->module_get_function);
  need("hipModuleLaunchKernel", api->module_launch_kernel);
  need("hipEventCreate", api->event_create);
  need("hipEventRecord", api->event_record);
  need("hipEventSynchronize", api->event_synchronize);
  need("hipEventElapsedTime", api->event_elapsed_time);
  need("hipEventDestroy", api->event_destroy);
  if (missing) {
    dlclose(handle);
    return fail(library + " lacks " + missing + ": not a HIP runtime metatune can use");
  }

  // From here on libamdhip64 stays loaded even on failure: hipInit may have started threads.
  // Without a device hipInit answers hipErrorInvalidDevice, which says less than the count.
  const int init = api->init(0);
  g_initialised = true;
  int count = 0;
  if (int r = api->get_device_count(&count); r != abi::hipSuccess)
    return fail("hipGetDeviceCount: " + describe_with(*api, r));
  if (count <= 0) return fail("hipGetDeviceCount: 0 devices");
  if (init != abi::hipSuccess) return fail("hipInit: " + describe_with(*api, init));
  return std::unique_ptr<HipRuntime>(new HipRuntime(std::move(api), count));
}

HipRuntime* HipRuntime::get(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<HipRuntime> instance;
  static std::string reason;
  std::call_once(once, [] { instance = load(&reason); });
  if (!instance && why) *why = reason;
  return instance.get();
}

int HipRuntime::device_count() const {
  return device_count_;
}

std::string HipRuntime::describe(int hip_error) const {
  return describe_with(*api_, hip_error);
}

void HipRuntime::check(int hip_error, const char* call, const std::string& detail) const {
  if (hip_error == abi::hipSuccess) return;
  std::string message = std::string(call) + ": " + describe(hip_error);
  if (!detail.empty()) message += " " + detail;
  throw HipError(message, hip_error);
}

DeviceInfo HipRuntime::device_info(int ordinal) const {
  const Api& api = *api_;
  abi::hipDevice_t dev = 0;
  check(api.device_get(&dev, ordinal), "hipDeviceGet", "[ordinal " + std::to_string(ordinal) + "]");
  auto attr = [&](abi::hipDeviceAttribute_t a) {
    int v = 0;
    check(api.device_get_attribute(&v, a, ordinal), "hipDeviceGetAttribute",
          "[attribute " + std::to_string(a) + "]");
    return v;
  };

  DeviceInfo d;
  d.ordinal = ordinal;
  char name[256] = {};
  check(api.device_get_name(name, static_cast<int>(sizeof name) - 1, dev), "hipDeviceGetName");
  d.name = name;
  d.arch = arch_of_device(ordinal);
  d.compute_units = attr(abi::hipDeviceAttributeMultiprocessorCount);
  d.max_threads_per_block = attr(abi::hipDeviceAttributeMaxThreadsPerBlock);
  d.max_block_dim[0] = attr(abi::hipDeviceAttributeMaxBlockDimX);
  d.max_block_dim[1] = attr(abi::hipDeviceAttributeMaxBlockDimY);
  d.max_block_dim[2] = attr(abi::hipDeviceAttributeMaxBlockDimZ);
  d.wavefront_size = attr(abi::hipDeviceAttributeWarpSize);
  d.lds_bytes_per_block = attr(abi::hipDeviceAttributeMaxSharedMemoryPerBlock);
  d.registers_per_block = attr(abi::hipDeviceAttributeMaxRegistersPerBlock);
  d.l2_bytes = attr(abi::hipDeviceAttributeL2CacheSize);
  // The attribute is an int, too small for today's memories: the size_t call where there is one.
  std::size_t total = 0;
  if (api.device_total_mem) {
    check(api.device_total_mem(&total, dev), "hipDeviceTotalMem");
    d.global_memory_bytes = static_cast<int64_t>(total);
  } else {
    d.global_memory_bytes = static_cast<unsigned>(attr(abi::hipDeviceAttributeTotalGlobalMem));
  }
  d.clock_khz = attr(abi::hipDeviceAttributeClockRate);
  return d;
}

std::vector<DeviceInfo> HipRuntime::devices() const {
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

  // A process that has initialised HIP itself can no longer fork a child that uses it, but
  // needs none: it answers from its own runtime.
  if (g_initialised) {
    std::string reason;
    HipRuntime* runtime = HipRuntime::get(&reason);
    if (!runtime) return fail(reason.empty() ? "no ROCm device (initialised elsewhere)" : reason);
    try {
      return devices_to_json(runtime->devices());
    } catch (const std::exception& e) {
      return fail(std::string("no ROCm device (") + e.what() + ")");
    }
  }

  std::string reason;
  std::optional<std::string> answer = sdk::ask_forked_child(
      [] {
        std::string w;
        std::unique_ptr<HipRuntime> runtime = HipRuntime::load(&w);
        if (!runtime) throw std::runtime_error(w);
        return devices_to_json(runtime->devices());
      },
      timeout, &reason);
  if (answer) return answer;
  return fail(reason.rfind("no ROCm device (", 0) == 0
                  ? reason
                  : "no ROCm device (device query: " + reason + ")");
}

// ---------------------------------------------------------------------------------- Device

Device::Device(const HipRuntime& runtime, int ordinal) : runtime_(&runtime), ordinal_(ordinal) {
  make_current();
  info_ = runtime.device_info(ordinal);
}

// Errors dropped: a destructor cannot throw, and after a device fault every free fails anyway.
Device::~Device() {
  if (!flush_) return;
  runtime_->api().set_device(ordinal_);
  runtime_->api().mem_free(flush_);
}

void Device::make_current() const {
  runtime_->check(runtime_->api().set_device(ordinal_), "hipSetDevice",
                  "[ordinal " + std::to_string(ordinal_) + "]");
}

void Device::synchronize() const {
  make_current();
  runtime_->check(runtime_->api().device_synchronize(), "hipDeviceSynchronize");
}

void Device::launch(void* function, const std::array<unsigned, 3>& grid,
                    const std::array<unsigned, 3>& block, const std::vector<void*>& params) const {
  if (!function) throw std::invalid_argument("Device::launch: no function");
  make_current();
  // hipModuleLaunchKernel only reads the array; its C signature is just not const-correct.
  runtime_->check(runtime_->api().module_launch_kernel(static_cast<abi::hipFunction_t>(function),
                                                       grid[0], grid[1], grid[2], block[0],
                                                       block[1], block[2], 0, nullptr,
                                                       const_cast<void**>(params.data()), nullptr),
                  "hipModuleLaunchKernel",
                  "[grid " + std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
                      std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
                      std::to_string(block[1]) + "x" + std::to_string(block[2]) + "]");
}

void Device::flush_l2() {
  make_current();
  if (!flush_) {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(info_.l2_bytes, 1 << 20)) * 2;
    void* p = nullptr;
    runtime_->check(runtime_->api().mem_alloc(&p, bytes), "hipMalloc",
                    "[" + std::to_string(bytes) + " bytes for the L2 flush]");
    flush_ = p;
    flush_bytes_ = bytes;
  }
  runtime_->check(
      runtime_->api().mem_set(flush_, static_cast<int>(++g_flush_value & 0xff), flush_bytes_),
      "hipMemset", "[the L2 flush]");
}

// ---------------------------------------------------------------------------- DeviceBuffer

DeviceBuffer::DeviceBuffer(const Device& device, size_t bytes) : device_(&device), bytes_(bytes) {
  device.make_current();
  void* p = nullptr;
  const size_t alloc = std::max<size_t>(bytes, 1); // a valid pointer even for empty tensors
  device.runtime().check(device.runtime().api().mem_alloc(&p, alloc), "hipMalloc",
                         "[" + std::to_string(alloc) + " bytes]");
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  const HipRuntime::Api& api = device_->runtime().api();
  api.set_device(device_->info().ordinal);
  api.mem_free(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {
}

void DeviceBuffer::upload(const void* src, size_t bytes) {
  if (bytes > bytes_)
    throw std::out_of_range("DeviceBuffer::upload: " + std::to_string(bytes) +
                            " bytes into a buffer of " + std::to_string(bytes_));
  if (bytes == 0) return;
  device_->make_current();
  device_->runtime().check(
      device_->runtime().api().mem_copy(ptr_, src, bytes, abi::hipMemcpyHostToDevice), "hipMemcpy",
      "[host to device, " + std::to_string(bytes) + " bytes]");
}

void DeviceBuffer::download(void* dst, size_t bytes) const {
  if (bytes > bytes_)
    throw std::out_of_range("DeviceBuffer::download: " + std::to_string(bytes) +
                            " bytes from a buffer of " + std::to_string(bytes_));
  if (bytes == 0) return;
  device_->make_current();
  device_->runtime().check(
      device_->runtime().api().mem_copy(dst, ptr_, bytes, abi::hipMemcpyDeviceToHost), "hipMemcpy",
      "[device to host, " + std::to_string(bytes) + " bytes]");
}

// ---------------------------------------------------------------------------------- Module

Module::Module(const Device& device, const std::vector<char>& code_object) : device_(&device) {
  if (code_object.empty()) throw std::invalid_argument("Module: empty code object");
  device.make_current();
  abi::hipModule_t m = nullptr;
  device.runtime().check(
      device.runtime().api().module_load_data(&m, code_object.data()), "hipModuleLoadData",
      "[a code object of " + std::to_string(code_object.size()) + " bytes, device " +
          (device.info().arch.empty() ? "of unknown arch" : device.info().arch) + "]");
  module_ = m;
}

Module::~Module() {
  if (!module_) return;
  const HipRuntime::Api& api = device_->runtime().api();
  api.set_device(device_->info().ordinal);
  api.module_unload(static_cast<abi::hipModule_t>(module_));
}

void* Module::function(const std::string& name) const {
  device_->make_current();
  abi::hipFunction_t f = nullptr;
  device_->runtime().check(device_->runtime().api().module_get_function(
                               &f, static_cast<abi::hipModule_t>(module_), name.c_str()),
                           "hipModuleGetFunction", "[function \"" + name + "\"]");
  return f;
}

// ----------------------------------------------------------------------------------- Event

Event::Event(const Device& device) : device_(&device) {
  device.make_current();
  abi::hipEvent_t e = nullptr;
  device.runtime().check(device.runtime().api().event_create(&e), "hipEventCreate");
  event_ = e;
}

Event::~Event() {
  if (!event_) return;
  const HipRuntime::Api& api = device_->runtime().api();
  api.set_device(device_->info().ordinal);
  api.event_destroy(static_cast<abi::hipEvent_t>(event_));
}

void Event::record() {
  device_->make_current();
  device_->runtime().check(
      device_->runtime().api().event_record(static_cast<abi::hipEvent_t>(event_), nullptr),
      "hipEventRecord");
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  const Device& device = *end.device_;
  const HipRuntime::Api& api = device.runtime().api();
  device.make_current();
  device.runtime().check(api.event_synchronize(static_cast<abi::hipEvent_t>(end.event_)),
                         "hipEventSynchronize");
  float ms = 0.f;
  device.runtime().check(api.event_elapsed_time(&ms, static_cast<abi::hipEvent_t>(start.event_),
                                                static_cast<abi::hipEvent_t>(end.event_)),
                         "hipEventElapsedTime");
  return ms;
}

} // namespace mt::rocm
