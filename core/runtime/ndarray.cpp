#include "core/runtime/ndarray.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace mt {

namespace {

constexpr size_t kAlignment = 64;

int64_t count_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0) throw std::invalid_argument("NDArray: negative dimension " + std::to_string(s));
    n *= s;
  }
  return n;
}

std::string shape_str(DType t, const std::vector<int64_t>& shape) {
  std::string s = to_string(t) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Rounds to a binary float format with `mant` explicit mantissa bits and normal exponents in
// [emin, emax] (ties to even; subnormals kept; overflow to infinity). Scaling by powers of two
// is exact in double for these ranges, and nearbyint rounds ties to even.
double round_binary(double v, int mant, int emin, int emax) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = std::ilogb(v);
  if (e < emin) e = emin;
  double quantum = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(v / quantum) * quantum;
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

// splitmix64: tiny, deterministic across platforms.
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t double_to_int64(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

} // namespace

double round_to_dtype(double v, DType t) {
  switch (t.kind) {
  case DTypeKind::Float:
    if (t.bits == 64) return v;
    if (t.bits == 32) return static_cast<double>(static_cast<float>(v));
    if (t.bits == 16) return round_binary(v, 10, -14, 15);
    break;
  case DTypeKind::BFloat:
    if (t.bits == 16) return round_binary(v, 7, -126, 127);
    break;
  case DTypeKind::Bool:
    return v != 0 ? 1.0 : 0.0;
  case DTypeKind::Int:
  case DTypeKind::UInt:
    return static_cast<double>(wrap_to_dtype(double_to_int64(v), t));
  }
  throw std::invalid_argument("round_to_dtype: unsupported dtype " + to_string(t));
}

int64_t wrap_to_dtype(int64_t v, DType t) {
  if (t.is_bool()) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.kind == DTypeKind::Int && (u >> (t.bits - 1)) != 0) u |= ~mask;
  return static_cast<int64_t>(u);
}

uint16_t float_to_half_bits(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7E00;
  double r = std::fabs(round_binary(v, 10, -14, 15));
  if (std::isinf(r)) return sign | 0x7C00;
  if (r == 0) return sign;
  int e = std::ilogb(r);
  if (e < -14) // subnormal: r = m * 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(r, 24));
  uint16_t mant = static_cast<uint16_t>(std::ldexp(std::ldexp(r, -e) - 1.0, 10));
  return sign | static_cast<uint16_t>((e + 15) << 10) | mant;
}

double half_bits_to_double(uint16_t h) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1F;
  int mant = h & 0x3FF;
  if (exp == 0x1F)
    return mant ? std::numeric_limits<double>::quiet_NaN()
                : sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

uint16_t float_to_bf16_bits(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0 : 0x7FC0;
  // The bf16 value is exactly representable as a float: its top 16 bits are the encoding.
  float f = static_cast<float>(round_binary(v, 7, -126, 127));
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

double bf16_bits_to_double(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void NDArray::FreeDeleter::operator()(void* p) const {
  std::free(p);
}

NDArray::NDArray(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), num_elements_(count_elements(shape_)) {
  size_t bytes = (nbytes() + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  void* p = std::aligned_alloc(kAlignment, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  owned_.reset(p);
  data_ = p;
}

NDArray::NDArray(DType dtype, std::vector<int64_t> shape, void* data)
    : dtype_(dtype), shape_(std::move(shape)), num_elements_(count_elements(shape_)), data_(data) {
  if (!data && num_elements_ > 0) throw std::invalid_argument("NDArray view over null memory");
}

NDArray::NDArray(const NDArray& o) : NDArray() {
  *this = o;
}

NDArray& NDArray::operator=(const NDArray& o) {
  if (this == &o) return *this;
  if (o.empty()) {
    *this = NDArray();
    dtype_ = o.dtype_;
    shape_ = o.shape_;
    num_elements_ = o.num_elements_;
    return *this;
  }
  NDArray copy(o.dtype_, o.shape_);
  std::memcpy(copy.data_, o.data_, o.nbytes());
  *this = std::move(copy);
  return *this;
}

void NDArray::check_index(int64_t i) const {
  if (i < 0 || i >= num_elements_)
    throw std::out_of_range("NDArray " + shape_string() + ": flat index " + std::to_string(i) +
                            " out of range");
}

double NDArray::get_double(int64_t i) const {
  check_index(i);
  const void* p = static_cast<const char*>(data_) + i * dtype_.bytes();
  switch (dtype_.kind) {
  case DTypeKind::Float:
    if (dtype_.bits == 32) return *static_cast<const float*>(p);
    if (dtype_.bits == 64) return *static_cast<const double*>(p);
    if (dtype_.bits == 16) return half_bits_to_double(*static_cast<const uint16_t*>(p));
    break;
  case DTypeKind::BFloat:
    return bf16_bits_to_double(*static_cast<const uint16_t*>(p));
  default:
    return static_cast<double>(get_int(i));
  }
  throw std::invalid_argument("NDArray: unsupported dtype " + to_string(dtype_));
}

void NDArray::set_double(int64_t i, double v) {
  check_index(i);
  void* p = static_cast<char*>(data_) + i * dtype_.bytes();
  switch (dtype_.kind) {
  case DTypeKind::Float:
    if (dtype_.bits == 32) {
      *static_cast<float*>(p) = static_cast<float>(v);
      return;
    }
    if (dtype_.bits == 64) {
      *static_cast<double*>(p) = v;
      return;
    }
    if (dtype_.bits == 16) {
      *static_cast<uint16_t*>(p) = float_to_half_bits(v);
      return;
    }
    break;
  case DTypeKind::BFloat:
    *static_cast<uint16_t*>(p) = float_to_bf16_bits(v);
    return;
  case DTypeKind::Bool:
    set_int(i, v != 0);
    return;
  default:
    set_int(i, double_to_int64(v));
    return;
  }
  throw std::invalid_argument("NDArray: unsupported dtype " + to_string(dtype_));
}

int64_t NDArray::get_int(int64_t i) const {
  check_index(i);
  const void* p = static_cast<const char*>(data_) + i * dtype_.bytes();
  DType t = dtype_;
  if (t.is_bool()) return *static_cast<const uint8_t*>(p) != 0;
  if (t.kind == DTypeKind::Int) {
    switch (t.bits) {
    case 8:
      return *static_cast<const int8_t*>(p);
    case 16:
      return *static_cast<const int16_t*>(p);
    case 32:
      return *static_cast<const int32_t*>(p);
    case 64:
      return *static_cast<const int64_t*>(p);
    }
  } else if (t.kind == DTypeKind::UInt) {
    switch (t.bits) {
    case 8:
      return *static_cast<const uint8_t*>(p);
    case 16:
      return *static_cast<const uint16_t*>(p);
    case 32:
      return *static_cast<const uint32_t*>(p);
    case 64:
      return static_cast<int64_t>(*static_cast<const uint64_t*>(p));
    }
  } else {
    return double_to_int64(get_double(i));
  }
  throw std::invalid_argument("NDArray: unsupported dtype " + to_string(t));
}

void NDArray::set_int(int64_t i, int64_t v) {
  check_index(i);
  void* p = static_cast<char*>(data_) + i * dtype_.bytes();
  DType t = dtype_;
  if (t.is_float()) {
    set_double(i, static_cast<double>(v));
    return;
  }
  v = wrap_to_dtype(v, t);
  switch (t.bytes()) {
  case 1:
    *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
    return;
  case 2:
    *static_cast<uint16_t*>(p) = static_cast<uint16_t>(v);
    return;
  case 4:
    *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v);
    return;
  case 8:
    *static_cast<uint64_t*>(p) = static_cast<uint64_t>(v);
    return;
  }
  throw std::invalid_argument("NDArray: unsupported dtype " + to_string(t));
}

void NDArray::fill_random(uint64_t seed, double lo, double hi) {
  uint64_t state = seed * 0x2545F4914F6CDD1Dull + 0x1234567ull;
  if (dtype_.is_float()) {
    for (int64_t i = 0; i < num_elements_; ++i) {
      double u = static_cast<double>(next_random(state) >> 11) * 0x1.0p-53;
      set_double(i, lo + u * (hi - lo));
    }
    return;
  }
  int64_t ilo = static_cast<int64_t>(std::ceil(std::max(lo, -4.0)));
  int64_t ihi = static_cast<int64_t>(std::floor(std::min(hi, 4.0)));
  if (dtype_.kind == DTypeKind::UInt || dtype_.is_bool()) ilo = std::max<int64_t>(ilo, 0);
  if (dtype_.is_bool()) ihi = 1;
  if (ihi < ilo) ihi = ilo;
  uint64_t span = static_cast<uint64_t>(ihi - ilo + 1);
  for (int64_t i = 0; i < num_elements_; ++i)
    set_int(i, ilo + static_cast<int64_t>(next_random(state) % span));
}

void NDArray::fill(double v) {
  for (int64_t i = 0; i < num_elements_; ++i)
    set_double(i, v);
}

std::string NDArray::shape_string() const {
  return shape_str(dtype_, shape_);
}

namespace {

std::string position(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

} // namespace

bool allclose(const NDArray& a, const NDArray& b, double rtol, double atol, std::string* why) {
  if (!(a.dtype() == b.dtype()) || a.shape() != b.shape()) {
    if (why) *why = "mismatched arrays: " + a.shape_string() + " vs " + b.shape_string();
    return false;
  }
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double x = a.get_double(i), y = b.get_double(i);
    bool ok;
    if (std::isnan(x) || std::isnan(y))
      ok = false;
    else if (std::isinf(x) || std::isinf(y))
      ok = x == y;
    else
      ok = std::fabs(x - y) <= atol + rtol * std::fabs(y);
    if (!ok) {
      if (why)
        *why = "first mismatch at " + position(a.shape(), i) + " (flat " + std::to_string(i) +
               "): " + fmt(x) + " vs " + fmt(y) + " (|diff| " + fmt(std::fabs(x - y)) + ", rtol " +
               fmt(rtol) + ", atol " + fmt(atol) + ")";
      return false;
    }
  }
  return true;
}

double max_abs(const NDArray& a) {
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = std::fabs(a.get_double(i));
    if (!std::isfinite(x)) return std::numeric_limits<double>::infinity();
    m = std::max(m, x);
  }
  return m;
}

double max_abs_diff(const NDArray& a, const NDArray& b) {
  if (a.shape() != b.shape())
    throw std::invalid_argument("max_abs_diff: shapes differ: " + a.shape_string() + " vs " +
                                b.shape_string());
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double x = a.get_double(i), y = b.get_double(i);
    if (x == y) continue; // also equal infinities
    double d = std::fabs(x - y);
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

} // namespace mt
