// The OpenCL vendor layer of the opencl target: libOpenCL is opened at run time (dlopen) rather
// than linked, so that the plugin loads, and reports "OpenCL not available", on machines without
// an ICD loader. On top of the resolved entry points sit small RAII wrappers (one device, one
// in-order profiling queue, programs, kernels, buffers) that turn every OpenCL error into a
// std::runtime_error naming the call and the error's symbolic name.
//
// Lifetimes: a Device must outlive every Program, Kernel and Buffer made from it (they borrow its
// context, queue and entry points). Nothing here is thread-safe: Device::launch sets kernel
// arguments and enqueues in two steps, so one Kernel must not be launched from two threads.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mt::opencl {

// The symbolic name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE"), or "CL_UNKNOWN_ERROR".
const char* error_name(cl_int code);
// Throws std::runtime_error("<call>: <NAME> (<code>)[ (<context>)]") unless code is CL_SUCCESS.
void check(cl_int code, const char* call, const std::string& context = "");

// The entry points of libOpenCL, resolved once per process with dlsym. The library stays loaded
// until exit: unloading an ICD loader (and the drivers it loaded) is not safe while driver
// threads may still run.
class OpenClLibrary {
public:
  // The loaded library, or nullptr with *why set ("OpenCL not available (libOpenCL.so.1 not
  // found: ...)"). Tries $METATUNE_OPENCL_LIBRARY, then libOpenCL.so.1, then libOpenCL.so.
  static const OpenClLibrary* get(std::string* why);

  void* handle = nullptr;
  std::string path; // the name that loaded

  decltype(&::clGetPlatformIDs) GetPlatformIDs = nullptr;
  decltype(&::clGetPlatformInfo) GetPlatformInfo = nullptr;
  decltype(&::clGetDeviceIDs) GetDeviceIDs = nullptr;
  decltype(&::clGetDeviceInfo) GetDeviceInfo = nullptr;
  decltype(&::clCreateContext) CreateContext = nullptr;
  decltype(&::clReleaseContext) ReleaseContext = nullptr;
  decltype(&::clCreateCommandQueue) CreateCommandQueue = nullptr;
  decltype(&::clReleaseCommandQueue) ReleaseCommandQueue = nullptr;
  decltype(&::clCreateProgramWithSource) CreateProgramWithSource = nullptr;
  decltype(&::clBuildProgram) BuildProgram = nullptr;
  decltype(&::clGetProgramBuildInfo) GetProgramBuildInfo = nullptr;
  decltype(&::clReleaseProgram) ReleaseProgram = nullptr;
  decltype(&::clCreateKernel) CreateKernel = nullptr;
  decltype(&::clGetKernelInfo) GetKernelInfo = nullptr;
  decltype(&::clGetKernelWorkGroupInfo) GetKernelWorkGroupInfo = nullptr;
  decltype(&::clReleaseKernel) ReleaseKernel = nullptr;
  decltype(&::clSetKernelArg) SetKernelArg = nullptr;
  decltype(&::clCreateBuffer) CreateBuffer = nullptr;
  decltype(&::clReleaseMemObject) ReleaseMemObject = nullptr;
  decltype(&::clEnqueueWriteBuffer) EnqueueWriteBuffer = nullptr;
  decltype(&::clEnqueueReadBuffer) EnqueueReadBuffer = nullptr;
  decltype(&::clEnqueueNDRangeKernel) EnqueueNDRangeKernel = nullptr;
  decltype(&::clFinish) Finish = nullptr;
  decltype(&::clWaitForEvents) WaitForEvents = nullptr;
  decltype(&::clGetEventProfilingInfo) GetEventProfilingInfo = nullptr;
  decltype(&::clReleaseEvent) ReleaseEvent = nullptr;

private:
  OpenClLibrary() = default;
  bool load(std::string* why);
};

// What the tuner needs to know about a device; also what query_device_in_child sends as JSON.
struct DeviceInfo {
  std::string platform, name, vendor, version, driver_version;
  std::string type; // "gpu", "cpu", "accelerator" (or "custom")
  int64_t compute_units = 0, max_work_group_size = 0, max_work_item_sizes[3] = {0, 0, 0},
          local_mem_size = 0, global_mem_size = 0, max_mem_alloc_size = 0,
          preferred_vector_width_float = 0;
  bool fp16 = false, fp64 = false;
};

class Buffer;
class Kernel;

// A kernel argument: a buffer (nullptr passes a NULL cl_mem), or a scalar passed as cl_long,
// cl_int, cl_double or cl_float. The alternative must match the kernel's parameter type exactly:
// OpenCL checks only the size.
using KernelArg = std::variant<const Buffer*, int64_t, int32_t, double, float>;

// One device with its context and one in-order command queue created with
// CL_QUEUE_PROFILING_ENABLE, so that every launch can be timed from its event.
class Device {
public:
  // Selector: "" takes $METATUNE_OPENCL_DEVICE, and when that is empty too the first GPU of any
  // platform, else the first device of any type; "P:D" is device D of platform P (numbers as
  // clinfo -l lists them); anything else is a case-insensitive substring of the device name.
  // Returns nullptr with *why set when OpenCL is missing, no device matches, or the context or
  // queue cannot be created.
  static std::unique_ptr<Device> open(std::string* why, const std::string& selector = "");
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  const OpenClLibrary& cl() const { return *cl_; }
  cl_platform_id platform_id() const { return platform_; }
  cl_device_id id() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }

  // Sets the arguments and enqueues the kernel over dims (1..3) dimensions of global (and of
  // local, or an implementation-chosen work-group size when local is nullptr). Does not wait.
  // With out_event the caller owns the event: pass it to event_seconds, which releases it.
  void launch(const Kernel& kernel, const std::vector<KernelArg>& args, const size_t global[3],
              const size_t local[3], int dims = 3, cl_event* out_event = nullptr) const;
  void finish() const;
  // Waits for the event, returns END - START of its profiling info in seconds, releases it
  // (also when it throws).
  double event_seconds(cl_event event) const;

private:
  Device() = default;
  const OpenClLibrary* cl_ = nullptr;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  DeviceInfo info_;
};

// clBuildProgram failed; what() is the error line followed by the build log.
class BuildError : public std::runtime_error {
public:
  BuildError(const std::string& message, std::string log)
      : std::runtime_error(message), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

private:
  std::string log_;
};

// An OpenCL C program compiled for the device. Throws BuildError on compile errors.
class Program {
public:
  Program(const Device& device, const std::string& source, const std::string& options = "");
  ~Program();
  Program(Program&& other) noexcept;
  Program& operator=(Program&&) = delete;

  // The build log, kept on success too: compilers put warnings there.
  const std::string& log() const { return log_; }
  const Device& device() const { return *device_; }
  cl_program handle() const { return program_; }

private:
  const Device* device_;
  cl_program program_ = nullptr;
  std::string log_;
};

class Kernel {
public:
  // Throws std::runtime_error naming the kernel when the program has no such kernel.
  Kernel(const Program& program, const std::string& name);
  ~Kernel();
  Kernel(Kernel&& other) noexcept;
  Kernel& operator=(Kernel&&) = delete;

  const std::string& name() const { return name_; }
  int num_args() const { return num_args_; }
  // CL_KERNEL_WORK_GROUP_SIZE: the largest work group this kernel can run with on the device,
  // which may be below DeviceInfo::max_work_group_size (registers, local memory).
  int64_t max_work_group_size() const { return max_work_group_size_; }
  // CL_KERNEL_LOCAL_MEM_SIZE: the local memory the kernel uses (its __local arrays).
  int64_t local_mem_size() const { return local_mem_size_; }
  const Device& device() const { return *device_; }
  cl_kernel handle() const { return kernel_; }

private:
  const Device* device_;
  cl_kernel kernel_ = nullptr;
  std::string name_;
  int num_args_ = 0;
  int64_t max_work_group_size_ = 0, local_mem_size_ = 0;
};

// A CL_MEM_READ_WRITE device buffer of a fixed size; reads and writes are blocking.
class Buffer {
public:
  Buffer(const Device& device, size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;

  // Copy bytes (at most size()) from host memory to the start of the buffer, or back.
  void write(const void* data, size_t bytes);
  void read(void* data, size_t bytes) const;
  size_t size() const { return bytes_; }
  cl_mem handle() const { return mem_; }

private:
  const Device* device_;
  cl_mem mem_ = nullptr;
  size_t bytes_ = 0;
};

} // namespace mt::opencl
