// NDArray: a dense, row-major, typed host tensor (owned 64-byte aligned storage or a view over
// external memory), with dtype-exact element access as double, deterministic random filling
// and tolerance comparison. Used as interpreter arguments, measurement inputs and test oracles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/dtype.h"

namespace mt {

class NDArray {
public:
  NDArray() = default;
  // Owned storage, zero-filled.
  NDArray(DType dtype, std::vector<int64_t> shape);
  // Non-owning view over `data` (at least nbytes() bytes, suitably aligned for the dtype); the
  // caller keeps the memory alive for the lifetime of the view.
  NDArray(DType dtype, std::vector<int64_t> shape, void* data);

  // Copying is deep: the copy always owns its storage (also when copying a view).
  NDArray(const NDArray& o);
  NDArray& operator=(const NDArray& o);
  NDArray(NDArray&& o) noexcept = default;
  NDArray& operator=(NDArray&& o) noexcept = default;
  ~NDArray() = default;

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * dtype_.bytes(); }
  bool owns_data() const { return owned_ != nullptr; }
  bool empty() const { return data_ == nullptr; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* data_as() { return static_cast<T*>(data_); }
  template <typename T> const T* data_as() const { return static_cast<const T*>(data_); }

  // Element `flat_index` (row-major) converted exactly to double (i64 beyond 2^53 loses bits).
  double get_double(int64_t flat_index) const;
  // Stores `v` converted to the dtype: round-to-nearest-even for floats, truncation toward
  // zero then two's-complement wrap for integers, v != 0 for bool.
  void set_double(int64_t flat_index, double v);
  int64_t get_int(int64_t flat_index) const;
  void set_int(int64_t flat_index, int64_t v); // wraps to the dtype width

  // Deterministic for a given (seed, dtype, shape): floats uniform in [lo, hi) (then rounded
  // to the dtype), integers small values in [max(lo,-4)..min(hi,4)] (bool: 0/1).
  void fill_random(uint64_t seed, double lo = -1, double hi = 1);
  void fill(double v);

  std::string shape_string() const; // "f32[4, 8]"

private:
  void check_index(int64_t i) const;

  DType dtype_ = DType::f32();
  std::vector<int64_t> shape_;
  int64_t num_elements_ = 0;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> owned_;
  void* data_ = nullptr;
};

// True if shapes and dtypes match and |a - b| <= atol + rtol * |b| everywhere (NaN never
// matches, equal infinities do). On failure `why` (if given) names the first mismatch: its
// multi-dimensional position and both values, or the shape/dtype difference.
bool allclose(const NDArray& a, const NDArray& b, double rtol = 1e-5, double atol = 1e-6,
              std::string* why = nullptr);
// Largest |a - b| over all elements (inf if any NaN differs); throws on a shape mismatch.
double max_abs_diff(const NDArray& a, const NDArray& b);
// The largest |element| (infinity if any is NaN or infinite; 0 for no elements).
double max_abs(const NDArray& a);

// ---- scalar conversions shared with the interpreter and code generators ---------------------
// Rounds `v` to the nearest value representable in float dtype `t` (ties to even), or wraps an
// integer dtype / normalises bool. The result is returned as double (exact).
double round_to_dtype(double v, DType t);
// Wraps `v` to the two's-complement width of integer dtype `t` (bool: v != 0).
int64_t wrap_to_dtype(int64_t v, DType t);
uint16_t float_to_half_bits(double v); // round-to-nearest-even, overflow -> inf
double half_bits_to_double(uint16_t h);
uint16_t float_to_bf16_bits(double v);
double bf16_bits_to_double(uint16_t h);

} // namespace mt
