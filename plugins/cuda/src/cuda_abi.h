// cuda_abi.h: the handful of C types, enum values and function signatures of libcuda.so.1 (the
// CUDA driver API) and libnvrtc.so that metatune calls through dlopen/dlsym. Private to
// plugins/cuda/src.
//
// Why not include <cuda.h>/<nvrtc.h>: the plugin must build on machines without the CUDA
// toolkit and load on machines without a driver, so nothing here may need either at build
// time. Every value below is the documented, stable ABI of libcuda/libnvrtc; each was checked
// against the CUDA 13.0 headers (/usr/local/cuda/include/cuda.h and nvrtc.h), not guessed.
// Add a value only after reading it from those headers.
#pragma once

#include <cstddef>
#include <cstdint>

// The opaque handle tags carry the same names as in cuda.h/nvrtc.h, so that a translation unit
// that also sees the real headers gets compatible pointer types rather than a clash.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;
struct CUstream_st;
struct _nvrtcProgram;

namespace mt::cuda::abi {

// ---------------------------------------------------------------------------- libcuda.so.1

// cuda.h: `typedef enum cudaError_enum {...} CUresult;` -- an int-sized C enum. Kept as a
// plain int so that any code a newer driver returns is representable.
using CUresult = int;
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
inline constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
inline constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
inline constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
inline constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
inline constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
inline constexpr CUresult CUDA_ERROR_NOT_PERMITTED = 800;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;
inline constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// Only used when the driver cannot name a code itself (cuGetErrorName missing or failing).
inline const char* fallback_error_name(CUresult code) {
  switch (code) {
  case CUDA_SUCCESS:
    return "CUDA_SUCCESS";
  case CUDA_ERROR_INVALID_VALUE:
    return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_NOT_INITIALIZED:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_DEINITIALIZED:
    return "CUDA_ERROR_DEINITIALIZED";
  case CUDA_ERROR_STUB_LIBRARY:
    return "CUDA_ERROR_STUB_LIBRARY";
  case CUDA_ERROR_NO_DEVICE:
    return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_INVALID_DEVICE:
    return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_IMAGE:
    return "CUDA_ERROR_INVALID_IMAGE";
  case CUDA_ERROR_INVALID_CONTEXT:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case CUDA_ERROR_INVALID_PTX:
    return "CUDA_ERROR_INVALID_PTX";
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case CUDA_ERROR_INVALID_HANDLE:
    return "CUDA_ERROR_INVALID_HANDLE";
  case CUDA_ERROR_NOT_FOUND:
    return "CUDA_ERROR_NOT_FOUND";
  case CUDA_ERROR_NOT_READY:
    return "CUDA_ERROR_NOT_READY";
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
  case CUDA_ERROR_MISALIGNED_ADDRESS:
    return "CUDA_ERROR_MISALIGNED_ADDRESS";
  case CUDA_ERROR_LAUNCH_FAILED:
    return "CUDA_ERROR_LAUNCH_FAILED";
  case CUDA_ERROR_NOT_PERMITTED:
    return "CUDA_ERROR_NOT_PERMITTED";
  case CUDA_ERROR_NOT_SUPPORTED:
    return "CUDA_ERROR_NOT_SUPPORTED";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case CUDA_ERROR_UNKNOWN:
    return "CUDA_ERROR_UNKNOWN";
  default:
    return nullptr;
  }
}

using CUdevice = int;                   // CUdevice_v1
using CUdeviceptr = unsigned long long; // CUdeviceptr_v2 on every 64-bit platform
using CUcontext = ::CUctx_st*;
using CUmodule = ::CUmod_st*;
using CUfunction = ::CUfunc_st*;
using CUevent = ::CUevent_st*;
using CUstream = ::CUstream_st*;

// cuda.h `CUdevice_attribute` (an int-sized C enum); only the attributes DeviceInfo reads.
using CUdevice_attribute = int;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// cuda.h `CUfunction_attribute`: the one the plugin sets.
using CUfunction_attribute = int;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// cuda.h `CUevent_flags`.
inline constexpr unsigned int CU_EVENT_DEFAULT = 0x0;

// Signatures of the entry points, under the symbol names the library exports. cuda.h maps the
// API names onto versioned symbols with macros (cuMemAlloc -> cuMemAlloc_v2, ...); a dlsym
// caller must ask for the versioned name itself, which is why the _v2 spelling appears here.
extern "C" {
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** str);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** str);
using PFN_cuInit = CUresult (*)(unsigned int flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice device);
using PFN_cuDeviceTotalMem_v2 = CUresult (*)(std::size_t* bytes, CUdevice device);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, CUdevice_attribute attribute,
                                              CUdevice device);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* context, CUdevice device);
using PFN_cuDevicePrimaryCtxRelease_v2 = CUresult (*)(CUdevice device);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext context);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule module);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* function, CUmodule module,
                                             const char* name);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction function, CUfunction_attribute attribute,
                                            int value);
using PFN_cuMemAlloc_v2 = CUresult (*)(CUdeviceptr* pointer, std::size_t bytes);
using PFN_cuMemFree_v2 = CUresult (*)(CUdeviceptr pointer);
using PFN_cuMemcpyHtoD_v2 = CUresult (*)(CUdeviceptr dst, const void* src, std::size_t bytes);
using PFN_cuMemcpyDtoH_v2 = CUresult (*)(void* dst, CUdeviceptr src, std::size_t bytes);
using PFN_cuMemsetD8_v2 = CUresult (*)(CUdeviceptr dst, unsigned char value, std::size_t count);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction function, unsigned int grid_x,
                                        unsigned int grid_y, unsigned int grid_z,
                                        unsigned int block_x, unsigned int block_y,
                                        unsigned int block_z, unsigned int shared_bytes,
                                        CUstream stream, void** params, void** extra);
using PFN_cuEventCreate = CUresult (*)(CUevent* event, unsigned int flags);
using PFN_cuEventRecord = CUresult (*)(CUevent event, CUstream stream);
using PFN_cuEventSynchronize = CUresult (*)(CUevent event);
using PFN_cuEventElapsedTime = CUresult (*)(float* milliseconds, CUevent start, CUevent end);
using PFN_cuEventDestroy_v2 = CUresult (*)(CUevent event);
// cuTensorMapEncodeTiled (CUDA 12.0+). CUtensorMap is 128 opaque bytes, 64-aligned; the enums
// are int-sized C enums: data type (6 FLOAT16, 9 BFLOAT16), interleave (0 NONE), swizzle
// (3 128B), L2 promotion (2 L2_128B), out-of-bounds fill (0 NONE).
using PFN_cuTensorMapEncodeTiled =
    CUresult (*)(void* tensor_map, int data_type, unsigned int rank, void* global_address,
                 const std::uint64_t* global_dim, const std::uint64_t* global_strides,
                 const std::uint32_t* box_dim, const std::uint32_t* element_strides, int interleave,
                 int swizzle, int l2_promotion, int oob_fill);
}

// ---------------------------------------------------------------------------- libnvrtc.so

// nvrtc.h `nvrtcResult` (an int-sized C enum).
using nvrtcResult = int;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_OUT_OF_MEMORY = 1;
inline constexpr nvrtcResult NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2;
inline constexpr nvrtcResult NVRTC_ERROR_INVALID_INPUT = 3;
inline constexpr nvrtcResult NVRTC_ERROR_INVALID_PROGRAM = 4;
inline constexpr nvrtcResult NVRTC_ERROR_INVALID_OPTION = 5;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;
inline constexpr nvrtcResult NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7;
inline constexpr nvrtcResult NVRTC_ERROR_INTERNAL_ERROR = 11;

using nvrtcProgram = ::_nvrtcProgram*;

extern "C" {
using PFN_nvrtcGetErrorString = const char* (*)(nvrtcResult result);
using PFN_nvrtcVersion = nvrtcResult (*)(int* major, int* minor);
using PFN_nvrtcGetNumSupportedArchs = nvrtcResult (*)(int* count);
using PFN_nvrtcGetSupportedArchs = nvrtcResult (*)(int* archs);
using PFN_nvrtcCreateProgram = nvrtcResult (*)(nvrtcProgram* program, const char* source,
                                               const char* name, int num_headers,
                                               const char* const* headers,
                                               const char* const* include_names);
using PFN_nvrtcDestroyProgram = nvrtcResult (*)(nvrtcProgram* program);
using PFN_nvrtcCompileProgram = nvrtcResult (*)(nvrtcProgram program, int num_options,
                                                const char* const* options);
using PFN_nvrtcGetProgramLogSize = nvrtcResult (*)(nvrtcProgram program, std::size_t* size);
using PFN_nvrtcGetProgramLog = nvrtcResult (*)(nvrtcProgram program, char* log);
using PFN_nvrtcGetCUBINSize = nvrtcResult (*)(nvrtcProgram program, std::size_t* size);
using PFN_nvrtcGetCUBIN = nvrtcResult (*)(nvrtcProgram program, char* cubin);
using PFN_nvrtcGetPTXSize = nvrtcResult (*)(nvrtcProgram program, std::size_t* size);
using PFN_nvrtcGetPTX = nvrtcResult (*)(nvrtcProgram program, char* ptx);
}

} // namespace mt::cuda::abi
