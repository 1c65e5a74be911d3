// The OpenCL vendor layer: loading libOpenCL with dlopen, the error-name table, and the RAII
// wrappers of opencl_runtime.h. Nothing here links libOpenCL; every entry point comes from dlsym.
#include "opencl_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <utility>

namespace mt::opencl {

namespace {

struct ErrorName {
  cl_int code;
  const char* name;
};

// Written out as numbers: cl.h hides the codes of versions above CL_TARGET_OPENCL_VERSION, and a
// 3.0 driver may still return them.
constexpr ErrorName kErrorNames[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1002, "CL_INVALID_D3D10_DEVICE_KHR"},
    {-1003, "CL_INVALID_D3D10_RESOURCE_KHR"},
    {-1004, "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR"},
    {-1005, "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR"},
    {-1006, "CL_INVALID_D3D11_DEVICE_KHR"},
    {-1007, "CL_INVALID_D3D11_RESOURCE_KHR"},
    {-1008, "CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR"},
    {-1009, "CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR"},
    {-1010, "CL_INVALID_DX9_MEDIA_ADAPTER_KHR"},
    {-1011, "CL_INVALID_DX9_MEDIA_SURFACE_KHR"},
    {-1012, "CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR"},
    {-1013, "CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR"},
    {-1057, "CL_DEVICE_PARTITION_FAILED_EXT"},
    {-1058, "CL_INVALID_PARTITION_COUNT_EXT"},
    {-1059, "CL_INVALID_PARTITION_NAME_EXT"},
    {-1092, "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR"},
    {-1093, "CL_INVALID_EGL_OBJECT_KHR"},
    {-1094, "CL_INVALID_ACCELERATOR_INTEL"},
    {-1095, "CL_INVALID_ACCELERATOR_TYPE_INTEL"},
    {-1096, "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL"},
    {-1097, "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL"},
    {-1098, "CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL"},
    {-1099, "CL_INVALID_VA_API_MEDIA_SURFACE_INTEL"},
    {-1100, "CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL"},
    {-1101, "CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL"},
    {-1108, "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM"},
    {-1121, "CL_CONTEXT_TERMINATED_KHR"},
    {-1138, "CL_INVALID_COMMAND_BUFFER_KHR"},
    {-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR"},
    {-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR"},
    {-1141, "CL_INVALID_MUTABLE_COMMAND_KHR"},
    {-1142, "CL_INVALID_SEMAPHORE_KHR"},
};

std::string error_line(cl_int code, const char* call, const std::string& context) {
  std::string s = std::string(call) + ": " + error_name(code) + " (" + std::to_string(code) + ")";
  if (!context.empty()) s += " (" + context + ")";
  return s;
}

template <class F> bool resolve(void* handle, const char* name, F& out, std::string* missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (!out && missing->empty()) *missing = name;
  return out != nullptr;
}

// Drivers pad or NUL-terminate their strings inconsistently (some names end in spaces).
std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back()))))
    s.pop_back();
  size_t first = 0;
  while (first < s.size() && std::isspace(static_cast<unsigned char>(s[first])))
    ++first;
  return s.substr(first);
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string platform_string(const OpenClLibrary& cl, cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  check(cl.GetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  check(cl.GetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  return trimmed(std::move(s));
}

std::string device_string(const OpenClLibrary& cl, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  check(cl.GetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(cl.GetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  return trimmed(std::move(s));
}

template <class T> T device_value(const OpenClLibrary& cl, cl_device_id d, cl_device_info what) {
  T v{};
  check(cl.GetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

bool has_extension(const std::string& extensions, const std::string& name) {
  std::istringstream in(extensions);
  std::string word;
  while (in >> word)
    if (word == name) return true;
  return false;
}

const char* type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  return "custom";
}

DeviceInfo describe(const OpenClLibrary& cl, cl_platform_id p, cl_device_id d) {
  DeviceInfo info;
  info.platform = platform_string(cl, p, CL_PLATFORM_NAME);
  info.name = device_string(cl, d, CL_DEVICE_NAME);
  info.vendor = device_string(cl, d, CL_DEVICE_VENDOR);
  info.version = device_string(cl, d, CL_DEVICE_VERSION);
  info.driver_version = device_string(cl, d, CL_DRIVER_VERSION);
  info.type = type_name(device_value<cl_device_type>(cl, d, CL_DEVICE_TYPE));
  info.compute_units = device_value<cl_uint>(cl, d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.max_work_group_size =
      static_cast<int64_t>(device_value<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  cl_uint dims = device_value<cl_uint>(cl, d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  std::vector<size_t> sizes(std::max<cl_uint>(dims, 3), 1);
  check(cl.GetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(size_t) * dims, sizes.data(),
                         nullptr),
        "clGetDeviceInfo", "CL_DEVICE_MAX_WORK_ITEM_SIZES");
  for (int i = 0; i < 3; ++i)
    info.max_work_item_sizes[i] = static_cast<int64_t>(sizes[i]);
  info.local_mem_size =
      static_cast<int64_t>(device_value<cl_ulong>(cl, d, CL_DEVICE_LOCAL_MEM_SIZE));
  info.global_mem_size =
      static_cast<int64_t>(device_value<cl_ulong>(cl, d, CL_DEVICE_GLOBAL_MEM_SIZE));
  info.max_mem_alloc_size =
      static_cast<int64_t>(device_value<cl_ulong>(cl, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  info.preferred_vector_width_float =
      device_value<cl_uint>(cl, d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
  std::string extensions = device_string(cl, d, CL_DEVICE_EXTENSIONS);
  info.fp16 = has_extension(extensions, "cl_khr_fp16");
  // Since OpenCL 1.2 double support is reported through the FP config; before, only by the
  // extension. Some 1.1 drivers reject the query, hence no check().
  cl_device_fp_config fp64_config = 0;
  if (cl.GetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64_config, &fp64_config, nullptr) !=
      CL_SUCCESS)
    fp64_config = 0;
  info.fp64 = fp64_config != 0 || has_extension(extensions, "cl_khr_fp64");
  return info;
}

struct Candidate {
  int platform_index, device_index;
  cl_platform_id platform;
  cl_device_id device;
  std::string name;
  cl_device_type type;
};

// All devices of all platforms; when there are none, *none_why says why.
std::vector<Candidate> enumerate_devices(const OpenClLibrary& cl, std::string* none_why) {
  cl_uint n_platforms = 0;
  cl_int err = cl.GetPlatformIDs(0, nullptr, &n_platforms);
  // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (cl_ext.h) when no driver is installed.
  constexpr cl_int kPlatformNotFoundKhr = -1001;
  if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && n_platforms == 0)) {
    *none_why = "no OpenCL platform (" + cl.path +
                " found no driver: " + error_line(err, "clGetPlatformIDs", "") + ")";
    return {};
  }
  check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(n_platforms);
  check(cl.GetPlatformIDs(n_platforms, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<Candidate> out;
  for (cl_uint p = 0; p < n_platforms; ++p) {
    cl_uint n_devices = 0;
    err = cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &n_devices);
    if (err == CL_DEVICE_NOT_FOUND || n_devices == 0) continue;
    check(err, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(n_devices);
    check(cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n_devices, devices.data(), nullptr),
          "clGetDeviceIDs");
    for (cl_uint d = 0; d < n_devices; ++d)
      out.push_back({static_cast<int>(p), static_cast<int>(d), platforms[p], devices[d],
                     device_string(cl, devices[d], CL_DEVICE_NAME),
                     device_value<cl_device_type>(cl, devices[d], CL_DEVICE_TYPE)});
  }
  if (out.empty())
    *none_why =
        "no OpenCL device (" + std::to_string(n_platforms) + " platforms, none with a device)";
  return out;
}

bool parse_index_pair(const std::string& s, int* p, int* d) {
  size_t colon = s.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  auto digits = [](const std::string& t) {
    return !t.empty() && t.size() < 6 &&
           std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  if (!digits(a) || !digits(b)) return false;
  *p = std::stoi(a);
  *d = std::stoi(b);
  return true;
}

std::string list_devices(const std::vector<Candidate>& all) {
  std::string s;
  for (const Candidate& c : all) {
    if (!s.empty()) s += ", ";
    s += std::to_string(c.platform_index) + ":" + std::to_string(c.device_index) + " " + c.name;
  }
  return s;
}

const Candidate* select_device(const std::vector<Candidate>& all, const std::string& selector,
                               std::string* why) {
  if (selector.empty()) {
    for (const Candidate& c : all)
      if (c.type & CL_DEVICE_TYPE_GPU) return &c;
    return &all.front();
  }
  int p = 0, d = 0;
  if (parse_index_pair(selector, &p, &d)) {
    for (const Candidate& c : all)
      if (c.platform_index == p && c.device_index == d) return &c;
  } else {
    std::string needle = lower(selector);
    for (const Candidate& c : all)
      if (lower(c.name).find(needle) != std::string::npos) return &c;
  }
  *why = "no OpenCL device matches '" + selector + "' (devices: " + list_devices(all) + ")";
  return nullptr;
}

} // namespace

const char* error_name(cl_int code) {
  for (const ErrorName& e : kErrorNames)
    if (e.code == code) return e.name;
  return "CL_UNKNOWN_ERROR";
}

void check(cl_int code, const char* call, const std::string& context) {
  if (code != CL_SUCCESS) throw std::runtime_error(error_line(code, call, context));
}

// ---------------------------------------------------------------------------------------------
// OpenClLibrary

bool OpenClLibrary::load(std::string* why) {
  std::vector<std::string> names;
  const char* env = std::getenv("METATUNE_OPENCL_LIBRARY");
  if (env && *env) names.push_back(env);
  names.push_back("libOpenCL.so.1");
  names.push_back("libOpenCL.so");
  std::string failures;
  for (const std::string& name : names) {
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      // libOpenCL.so is the development symlink to the same library: its failure adds nothing.
      if (name == "libOpenCL.so") continue;
      if (!failures.empty()) failures += "; ";
      if (env && name == env)
        failures += "METATUNE_OPENCL_LIBRARY=" + name + " not loadable: ";
      else
        failures += name + " not found: ";
      failures += err ? err : "unknown dlopen error";
      continue;
    }
    std::string missing;
    bool ok = true;
#define MT_RESOLVE(fn) ok &= resolve(h, "cl" #fn, fn, &missing)
    MT_RESOLVE(GetPlatformIDs);
    MT_RESOLVE(GetPlatformInfo);
    MT_RESOLVE(GetDeviceIDs);
    MT_RESOLVE(GetDeviceInfo);
    MT_RESOLVE(CreateContext);
    MT_RESOLVE(ReleaseContext);
    MT_RESOLVE(CreateCommandQueue);
    MT_RESOLVE(ReleaseCommandQueue);
    MT_RESOLVE(CreateProgramWithSource);
    MT_RESOLVE(BuildProgram);
    MT_RESOLVE(GetProgramBuildInfo);
    MT_RESOLVE(ReleaseProgram);
    MT_RESOLVE(CreateKernel);
    MT_RESOLVE(GetKernelInfo);
    MT_RESOLVE(GetKernelWorkGroupInfo);
    MT_RESOLVE(ReleaseKernel);
    MT_RESOLVE(SetKernelArg);
    MT_RESOLVE(CreateBuffer);
    MT_RESOLVE(ReleaseMemObject);
    MT_RESOLVE(EnqueueWriteBuffer);
    MT_RESOLVE(EnqueueReadBuffer);
    MT_RESOLVE(EnqueueNDRangeKernel);
    MT_RESOLVE(Finish);
    MT_RESOLVE(WaitForEvents);
    MT_RESOLVE(GetEventProfilingInfo);
    MT_RESOLVE(ReleaseEvent);
#undef MT_RESOLVE
    if (ok) {
      handle = h;
      path = name;
      return true;
    }
    if (!failures.empty()) failures += "; ";
    failures += name + " lacks " + missing;
    dlclose(h);
  }
  *why = "OpenCL not available (" + failures + ")";
  return false;
}

const OpenClLibrary* OpenClLibrary::get(std::string* why) {
  static std::once_flag once;
  static OpenClLibrary library;
  static bool loaded = false;
  static std::string reason;
  std::call_once(once, [] { loaded = library.load(&reason); });
  if (!loaded) {
    if (why) *why = reason;
    return nullptr;
  }
  return &library;
}

// ---------------------------------------------------------------------------------------------
// Device

std::unique_ptr<Device> Device::open(std::string* why, const std::string& selector_arg) {
  std::string ignored;
  if (!why) why = &ignored;
  const OpenClLibrary* cl = OpenClLibrary::get(why);
  if (!cl) return nullptr;
  std::string selector = selector_arg;
  if (selector.empty()) {
    const char* env = std::getenv("METATUNE_OPENCL_DEVICE");
    if (env) selector = env;
  }
  std::unique_ptr<Device> device(new Device);
  try {
    std::string none_why;
    std::vector<Candidate> all = enumerate_devices(*cl, &none_why);
    if (all.empty()) {
      *why = none_why;
      return nullptr;
    }
    const Candidate* chosen = select_device(all, selector, why);
    if (!chosen) return nullptr;
    device->cl_ = cl;
    device->platform_ = chosen->platform;
    device->device_ = chosen->device;
    device->info_ = describe(*cl, chosen->platform, chosen->device);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(chosen->platform), 0};
    cl_int err = CL_SUCCESS;
    device->context_ = cl->CreateContext(props, 1, &chosen->device, nullptr, nullptr, &err);
    check(err, "clCreateContext", chosen->name);
    device->queue_ =
        cl->CreateCommandQueue(device->context_, chosen->device, CL_QUEUE_PROFILING_ENABLE, &err);
    check(err, "clCreateCommandQueue", chosen->name);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
  return device;
}

Device::~Device() {
  if (!cl_) return;
  if (queue_) {
    cl_->Finish(queue_);
    cl_->ReleaseCommandQueue(queue_);
  }
  if (context_) cl_->ReleaseContext(context_);
}

void Device::launch(const Kernel& kernel, const std::vector<KernelArg>& args,
                    const size_t global[3], const size_t local[3], int dims,
                    cl_event* out_event) const {
  if (dims < 1 || dims > 3 || !global)
    throw std::invalid_argument("Device::launch(" + kernel.name() +
                                "): dims must be 1..3 and global given");
  if (static_cast<int>(args.size()) != kernel.num_args())
    throw std::invalid_argument("Device::launch(" + kernel.name() + "): the kernel takes " +
                                std::to_string(kernel.num_args()) + " arguments, " +
                                std::to_string(args.size()) + " given");
  for (size_t i = 0; i < args.size(); ++i) {
    auto set = [&](const auto& value, const char* type) {
      check(cl_->SetKernelArg(kernel.handle(), static_cast<cl_uint>(i), sizeof value, &value),
            "clSetKernelArg",
            "kernel " + kernel.name() + ", argument " + std::to_string(i) + ": " + type);
    };
    const KernelArg& a = args[i];
    if (auto* b = std::get_if<const Buffer*>(&a)) {
      cl_mem mem = *b ? (*b)->handle() : nullptr;
      set(mem, "buffer");
    } else if (auto* v = std::get_if<int64_t>(&a)) {
      set(static_cast<cl_long>(*v), "long");
    } else if (auto* v = std::get_if<int32_t>(&a)) {
      set(static_cast<cl_int>(*v), "int");
    } else if (auto* v = std::get_if<double>(&a)) {
      set(static_cast<cl_double>(*v), "double");
    } else {
      set(static_cast<cl_float>(std::get<float>(a)), "float");
    }
  }
  cl_int err = cl_->EnqueueNDRangeKernel(queue_, kernel.handle(), static_cast<cl_uint>(dims),
                                         nullptr, global, local, 0, nullptr, out_event);
  if (err != CL_SUCCESS) {
    auto shape = [dims](const size_t* s) {
      std::string r;
      for (int i = 0; i < dims; ++i)
        r += (i ? "x" : "") + std::to_string(s[i]);
      return r;
    };
    check(err, "clEnqueueNDRangeKernel",
          "kernel " + kernel.name() + ", global " + shape(global) + ", local " +
              (local ? shape(local) : std::string("auto")));
  }
}

void Device::finish() const {
  check(cl_->Finish(queue_), "clFinish");
}

double Device::event_seconds(cl_event event) const {
  struct Release {
    const OpenClLibrary* cl;
    cl_event e;
    ~Release() { cl->ReleaseEvent(e); }
  } release{cl_, event};
  check(cl_->WaitForEvents(1, &event), "clWaitForEvents");
  cl_ulong start = 0, end = 0;
  check(
      cl_->GetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
      "clGetEventProfilingInfo", "CL_PROFILING_COMMAND_START");
  check(cl_->GetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
        "clGetEventProfilingInfo", "CL_PROFILING_COMMAND_END");
  return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

// ---------------------------------------------------------------------------------------------
// Program, Kernel, Buffer

Program::Program(const Device& device, const std::string& source, const std::string& options)
    : device_(&device) {
  const OpenClLibrary& cl = device.cl();
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int err = CL_SUCCESS;
  program_ = cl.CreateProgramWithSource(device.context(), 1, &text, &length, &err);
  check(err, "clCreateProgramWithSource");
  cl_device_id id = device.id();
  cl_int build = cl.BuildProgram(program_, 1, &id, options.c_str(), nullptr, nullptr);
  size_t n = 0;
  if (cl.GetProgramBuildInfo(program_, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS &&
      n > 0) {
    std::string log(n, '\0');
    if (cl.GetProgramBuildInfo(program_, id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) ==
        CL_SUCCESS)
      log_ = trimmed(std::move(log));
  }
  if (build != CL_SUCCESS) {
    cl.ReleaseProgram(program_);
    program_ = nullptr;
    std::string message = error_line(build, "clBuildProgram", options.empty() ? "" : options);
    if (!log_.empty()) message += "\n" + log_;
    throw BuildError(message, log_);
  }
}

Program::~Program() {
  if (program_) device_->cl().ReleaseProgram(program_);
}

Program::Program(Program&& other) noexcept
    : device_(other.device_), program_(std::exchange(other.program_, nullptr)),
      log_(std::move(other.log_)) {}

Kernel::Kernel(const Program& program, const std::string& name)
    : device_(&program.device()), name_(name) {
  const OpenClLibrary& cl = device_->cl();
  cl_int err = CL_SUCCESS;
  kernel_ = cl.CreateKernel(program.handle(), name.c_str(), &err);
  check(err, "clCreateKernel", "kernel " + name);
  try {
    cl_uint n_args = 0;
    check(cl.GetKernelInfo(kernel_, CL_KERNEL_NUM_ARGS, sizeof n_args, &n_args, nullptr),
          "clGetKernelInfo", "kernel " + name);
    num_args_ = static_cast<int>(n_args);
    size_t wg = 0;
    check(cl.GetKernelWorkGroupInfo(kernel_, device_->id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                                    &wg, nullptr),
          "clGetKernelWorkGroupInfo", "kernel " + name);
    max_work_group_size_ = static_cast<int64_t>(wg);
    cl_ulong local = 0;
    check(cl.GetKernelWorkGroupInfo(kernel_, device_->id(), CL_KERNEL_LOCAL_MEM_SIZE, sizeof local,
                                    &local, nullptr),
          "clGetKernelWorkGroupInfo", "kernel " + name);
    local_mem_size_ = static_cast<int64_t>(local);
  } catch (...) {
    cl.ReleaseKernel(kernel_);
    throw;
  }
}

Kernel::~Kernel() {
  if (kernel_) device_->cl().ReleaseKernel(kernel_);
}

Kernel::Kernel(Kernel&& other) noexcept
    : device_(other.device_), kernel_(std::exchange(other.kernel_, nullptr)),
      name_(std::move(other.name_)), num_args_(other.num_args_),
      max_work_group_size_(other.max_work_group_size_), local_mem_size_(other.local_mem_size_) {}

Buffer::Buffer(const Device& device, size_t bytes) : device_(&device), bytes_(bytes) {
  cl_int err = CL_SUCCESS;
  mem_ = device.cl().CreateBuffer(device.context(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
  check(err, "clCreateBuffer", std::to_string(bytes) + " bytes");
}

Buffer::~Buffer() {
  if (mem_) device_->cl().ReleaseMemObject(mem_);
}

Buffer::Buffer(Buffer&& other) noexcept
    : device_(other.device_), mem_(std::exchange(other.mem_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

void Buffer::write(const void* data, size_t bytes) {
  if (bytes > bytes_)
    throw std::out_of_range("Buffer::write: " + std::to_string(bytes) + " bytes into a buffer of " +
                            std::to_string(bytes_));
  check(device_->cl().EnqueueWriteBuffer(device_->queue(), mem_, CL_TRUE, 0, bytes, data, 0,
                                         nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void Buffer::read(void* data, size_t bytes) const {
  if (bytes > bytes_)
    throw std::out_of_range("Buffer::read: " + std::to_string(bytes) + " bytes from a buffer of " +
                            std::to_string(bytes_));
  check(device_->cl().EnqueueReadBuffer(device_->queue(), mem_, CL_TRUE, 0, bytes, data, 0, nullptr,
                                        nullptr),
        "clEnqueueReadBuffer");
}

} // namespace mt::opencl
