// hip_abi.h: the handful of C types, enum values and function signatures of libamdhip64 (the
// HIP runtime on AMD GPUs) that metatune calls through dlopen/dlsym. Private to
// plugins/rocm/src.
//
// Why not include <hip/hip_runtime_api.h>: the plugin must build on machines without ROCm and
// load on machines without an AMD GPU, so nothing here may need ROCm at build time. Every value
// below is ROCm 5.2's ABI, read from /usr/include/hip/hip_runtime_api.h (Debian's
// libamdhip64-dev 5.2) by a program that printed them, not guessed. The attribute values used
// here are unchanged in the HIP header of ROCm/rocm-systems (ROCm 6/7: entries were only
// renamed "Unused" in place), so libamdhip64.so.6 reads them alike. Add a value only after
// reading it from the header.
#pragma once

#include <cstddef>

// The opaque handle tags carry the same names as in hip_runtime_api.h, so that a translation
// unit that also sees the real header gets compatible pointer types rather than a clash.
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipEvent_t;
struct ihipStream_t;

namespace mt::rocm::abi {

// hip_runtime_api.h: `typedef enum hipError_t {...} hipError_t;` -- an int-sized C enum, kept
// as a plain int so that any code a newer runtime returns is representable.
using hipError_t = int;
inline constexpr hipError_t hipSuccess = 0;
inline constexpr hipError_t hipErrorInvalidValue = 1;
inline constexpr hipError_t hipErrorOutOfMemory = 2;
inline constexpr hipError_t hipErrorNotInitialized = 3;
inline constexpr hipError_t hipErrorInsufficientDriver = 35;
inline constexpr hipError_t hipErrorInvalidDeviceFunction = 98;
inline constexpr hipError_t hipErrorNoDevice = 100;
inline constexpr hipError_t hipErrorInvalidDevice = 101;
inline constexpr hipError_t hipErrorInvalidImage = 200;
inline constexpr hipError_t hipErrorInvalidContext = 201;
inline constexpr hipError_t hipErrorNoBinaryForGpu = 209;
inline constexpr hipError_t hipErrorInvalidKernelFile = 218;
inline constexpr hipError_t hipErrorSharedObjectInitFailed = 303;
inline constexpr hipError_t hipErrorInvalidHandle = 400;
inline constexpr hipError_t hipErrorNotFound = 500;
inline constexpr hipError_t hipErrorNotReady = 600;
inline constexpr hipError_t hipErrorIllegalAddress = 700;
inline constexpr hipError_t hipErrorLaunchOutOfResources = 701;
inline constexpr hipError_t hipErrorLaunchFailure = 719;
inline constexpr hipError_t hipErrorNotSupported = 801;
inline constexpr hipError_t hipErrorUnknown = 999;

// Only used when the runtime cannot name a code itself (hipGetErrorName missing), or names an
// unknown one "hipErrorUnknown".
inline const char* fallback_error_name(hipError_t code) {
  switch (code) {
  case hipSuccess:
    return "hipSuccess";
  case hipErrorInvalidValue:
    return "hipErrorInvalidValue";
  case hipErrorOutOfMemory:
    return "hipErrorOutOfMemory";
  case hipErrorNotInitialized:
    return "hipErrorNotInitialized";
  case hipErrorInsufficientDriver:
    return "hipErrorInsufficientDriver";
  case hipErrorInvalidDeviceFunction:
    return "hipErrorInvalidDeviceFunction";
  case hipErrorNoDevice:
    return "hipErrorNoDevice";
  case hipErrorInvalidDevice:
    return "hipErrorInvalidDevice";
  case hipErrorInvalidImage:
    return "hipErrorInvalidImage";
  case hipErrorInvalidContext:
    return "hipErrorInvalidContext";
  case hipErrorNoBinaryForGpu:
    return "hipErrorNoBinaryForGpu";
  case hipErrorInvalidKernelFile:
    return "hipErrorInvalidKernelFile";
  case hipErrorSharedObjectInitFailed:
    return "hipErrorSharedObjectInitFailed";
  case hipErrorInvalidHandle:
    return "hipErrorInvalidHandle";
  case hipErrorNotFound:
    return "hipErrorNotFound";
  case hipErrorNotReady:
    return "hipErrorNotReady";
  case hipErrorIllegalAddress:
    return "hipErrorIllegalAddress";
  case hipErrorLaunchOutOfResources:
    return "hipErrorLaunchOutOfResources";
  case hipErrorLaunchFailure:
    return "hipErrorLaunchFailure";
  case hipErrorNotSupported:
    return "hipErrorNotSupported";
  case hipErrorUnknown:
    return "hipErrorUnknown";
  default:
    return nullptr;
  }
}

// ROCm 5.2's hipGetErrorString returns the error's name again, which explains nothing; these
// are the header's own comments on the codes, for the ones a tuner meets.
inline const char* fallback_error_text(hipError_t code) {
  switch (code) {
  case hipErrorInvalidValue:
    return "a parameter is NULL or out of its acceptable range";
  case hipErrorNoDevice:
    return "no ROCm-capable device is detected";
  case hipErrorInvalidDevice:
    return "the device ordinal is out of range";
  case hipErrorInvalidKernelFile:
    return "the code object is invalid";
  case hipErrorLaunchOutOfResources:
    return "out of resources for the launch";
  case hipErrorLaunchFailure:
    return "an exception occurred on the device while executing a kernel";
  case hipErrorNotSupported:
    return "the HIP API is not supported or implemented";
  default:
    return nullptr;
  }
}

// `typedef int hipDevice_t;`
using hipDevice_t = int;

// `typedef enum hipDeviceAttribute_t {...}` (an int-sized C enum).
using hipDeviceAttribute_t = int;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeClockRate = 5;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeL2CacheSize = 19;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxBlockDimX = 26;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxBlockDimY = 27;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxBlockDimZ = 28;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxThreadsPerBlock = 56;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMultiprocessorCount = 63;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxRegistersPerBlock = 71;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeTotalGlobalMem = 84;
inline constexpr hipDeviceAttribute_t hipDeviceAttributeWarpSize = 87;

// `typedef enum hipMemcpyKind {...}`
using hipMemcpyKind = int;
inline constexpr hipMemcpyKind hipMemcpyHostToDevice = 1;
inline constexpr hipMemcpyKind hipMemcpyDeviceToHost = 2;

using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipEvent_t = ihipEvent_t*;
using hipStream_t = ihipStream_t*;

// The signatures, as declared in hip_runtime_api.h (all extern "C").
using PFN_hipGetErrorName = const char* (*)(hipError_t);
using PFN_hipGetErrorString = const char* (*)(hipError_t);
using PFN_hipInit = hipError_t (*)(unsigned int flags);
using PFN_hipRuntimeGetVersion = hipError_t (*)(int* version);
using PFN_hipGetDeviceCount = hipError_t (*)(int* count);
using PFN_hipDeviceGet = hipError_t (*)(hipDevice_t* device, int ordinal);
using PFN_hipDeviceGetName = hipError_t (*)(char* name, int len, hipDevice_t device);
using PFN_hipDeviceGetAttribute = hipError_t (*)(int* value, hipDeviceAttribute_t attr,
                                                 int device_id);
using PFN_hipDeviceTotalMem = hipError_t (*)(std::size_t* bytes, hipDevice_t device);
using PFN_hipSetDevice = hipError_t (*)(int device_id);
using PFN_hipDeviceSynchronize = hipError_t (*)();
using PFN_hipMalloc = hipError_t (*)(void** ptr, std::size_t size);
using PFN_hipFree = hipError_t (*)(void* ptr);
using PFN_hipMemcpy = hipError_t (*)(void* dst, const void* src, std::size_t bytes,
                                     hipMemcpyKind kind);
using PFN_hipMemset = hipError_t (*)(void* dst, int value, std::size_t bytes);
using PFN_hipModuleLoadData = hipError_t (*)(hipModule_t* module, const void* image);
using PFN_hipModuleUnload = hipError_t (*)(hipModule_t module);
using PFN_hipModuleGetFunction = hipError_t (*)(hipFunction_t* function, hipModule_t module,
                                                const char* name);
using PFN_hipModuleLaunchKernel = hipError_t (*)(hipFunction_t f, unsigned grid_x, unsigned grid_y,
                                                 unsigned grid_z, unsigned block_x,
                                                 unsigned block_y, unsigned block_z,
                                                 unsigned shared_bytes, hipStream_t stream,
                                                 void** params, void** extra);
using PFN_hipEventCreate = hipError_t (*)(hipEvent_t* event);
using PFN_hipEventRecord = hipError_t (*)(hipEvent_t event, hipStream_t stream);
using PFN_hipEventSynchronize = hipError_t (*)(hipEvent_t event);
using PFN_hipEventElapsedTime = hipError_t (*)(float* ms, hipEvent_t start, hipEvent_t stop);
using PFN_hipEventDestroy = hipError_t (*)(hipEvent_t event);

} // namespace mt::rocm::abi
