// What the CUDA C++ the generator writes needs from CUDA, for the host's C++ compiler: the
// kernels cuda_to_cpp rewrites include this header alone. The keywords become nothing,
// threadIdx and the like read the emulated thread's, each asm statement is a call to
// mt_emu::ptx, which carries the PTX instruction out (ptx_emulator.cpp, in the test binary,
// whose symbols the kernel's library resolves when it is loaded).
#pragma once

#include <math.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#define __CUDA_ARCH__ 900
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) alignas(n)

namespace mt_emu {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

// One operand of an asm statement, in the order of its %N.
struct Op {
  uint64_t value = 0; // inputs (integers, pointers, float bits)
  void* out = nullptr;
  int out_bytes = 0;
  bool is_float = false;

  template <class T> static Op in(const T& x) {
    Op o;
    if constexpr (std::is_pointer_v<T>)
      o.value = reinterpret_cast<uint64_t>(x);
    else if constexpr (std::is_same_v<T, float>) {
      uint32_t b;
      std::memcpy(&b, &x, 4);
      o.value = b;
      o.is_float = true;
    } else
      o.value = static_cast<uint64_t>(x);
    return o;
  }
  template <class T> static Op out_ref(T& x) {
    Op o;
    o.out = &x;
    o.out_bytes = sizeof(T);
    o.is_float = std::is_floating_point_v<T>;
    return o;
  }
  float* f32() const { return static_cast<float*>(out); }
};

// The emulator's side (ptx_emulator.cpp).
void ptx(const char* text, std::vector<Op> ops);
void* shared_alloc(int declaration, size_t bytes, size_t align);
unsigned char* dynamic_shared(size_t align);
size_t shared_offset(const void* p);
const Dim3& thread_index();
const Dim3& block_index();
const Dim3& block_dim();
const Dim3& grid_dim();
void syncthreads();
[[noreturn]] void trap();

} // namespace mt_emu

#define threadIdx (::mt_emu::thread_index())
#define blockIdx (::mt_emu::block_index())
#define blockDim (::mt_emu::block_dim())
#define gridDim (::mt_emu::grid_dim())

inline void __syncthreads() {
  mt_emu::syncthreads();
}
[[noreturn]] inline void __trap() {
  mt_emu::trap();
}
inline size_t __cvta_generic_to_shared(const void* p) {
  return mt_emu::shared_offset(p);
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float __uint_as_float(unsigned i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline unsigned __float_as_uint(float x) {
  unsigned i;
  std::memcpy(&i, &x, 4);
  return i;
}
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, 8);
  return d;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
using std::isnan;

struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) {
  return {x, y};
}
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

// f16 as memory holds it, converted through float (round to nearest even).
struct __half {
  unsigned short bits;
};
inline float __half2float(__half h) {
  uint16_t b = h.bits;
  const uint32_t sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1F, man = b & 0x3FF;
  uint32_t f;
  if (exp == 0x1F)
    f = sign | 0x7F800000u | (man << 13);
  else if (exp != 0)
    f = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0)
    f = sign;
  else {
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return __uint_as_float(f);
}
inline __half __float2half_rn(float x) {
  const uint32_t u = __float_as_uint(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(x);
  if (std::isnan(x)) return {static_cast<unsigned short>(sign | 0x7E00u)};
  if (a >= 65520.0f) return {static_cast<unsigned short>(sign | 0x7C00u)};
  if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24
    const float q = std::nearbyint(a * 16777216.0f);
    return {static_cast<unsigned short>(sign | static_cast<uint32_t>(q))};
  }
  const uint32_t ua = u & 0x7FFFFFFFu;
  uint32_t h = ((ua >> 13) - (112u << 10));
  const uint32_t rest = ua & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return {static_cast<unsigned short>(sign | h)};
}
inline __half __float2half(float x) {
  return __float2half_rn(x);
}

// bf16 as memory holds it: the upper half of a float.
struct __nv_bfloat16 {
  unsigned short bits;
};
inline float __bfloat162float(__nv_bfloat16 b) {
  return __uint_as_float(uint32_t{b.bits} << 16);
}

// WMMA: a fragment's layout among the warp's threads is opaque by definition, so each thread
// here holds the whole 16x16 tile; loads, products and stores are the warp's collective
// operations done by every thread alike (a store writes the same values 32 times).
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  float x[16 * 16];
};

inline float element(const __half& h) {
  return __half2float(h);
}
inline float element(const __nv_bfloat16& b) {
  return __uint_as_float(uint32_t{b.bits} << 16);
}
inline float element(const float& f) {
  return f;
}

template <class Use, class T, class L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float v) {
  for (float& e : f.x)
    e = v;
}
template <class Use, class T, class L, class P>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const P* p, unsigned ldm) {
  // Element (r, c) of the tile: row_major at p[r * ldm + c], col_major at p[c * ldm + r].
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      f.x[r * 16 + c] = element(std::is_same_v<L, col_major> ? p[c * ldm + r] : p[r * ldm + c]);
}
template <class TA, class LA, class TB, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d,
              const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
              const fragment<matrix_b, 16, 16, 16, TB, LB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  float out[16 * 16];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = c.x[i * 16 + j];
      for (int k = 0; k < 16; ++k)
        s += a.x[i * 16 + k] * b.x[k * 16 + j];
      out[i * 16 + j] = s;
    }
  std::memcpy(d.x, out, sizeof out);
}
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f,
                              unsigned ldm, layout_t layout) {
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c)
      (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * 16 + c];
}
} // namespace nvcuda::wmma
