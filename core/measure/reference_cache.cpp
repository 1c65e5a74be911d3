// Reference cache files (see reference_cache.h). Layout, all integers in the byte order of the
// machine that wrote the file (another byte order reads as another format version):
//
//   "MTREF\r\n\x1a"            8 bytes of magic (the \r\n and ^Z catch text-mode mangling)
//   u32 version, u32 number of params
//   u64 structural hash of the workload, u64 seed
//   u64 FNV-1a checksum of the regenerated inputs (all input params, in order)
//   f64 seconds the interpreter took
//   per param: u8 dtype kind, u8 dtype bits, u8 is_output, u8 0, u32 ndim, i64 dims[ndim]
//   u64 payload bytes, u64 FNV-1a checksum of the payload
//   payload: the output params' elements, in param order, raw
#include "core/measure/reference_cache.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

#include "core/ir/structural.h"

namespace mt {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kMagic[8] = {'M', 'T', 'R', 'E', 'F', '\r', '\n', '\x1a'};
// Bounds on header counts, so that a damaged header is reported instead of allocating wildly.
constexpr uint32_t kMaxParams = 4096;
constexpr uint32_t kMaxDims = 64;

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

uint64_t inputs_checksum(const Reference& ref) {
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < ref.args.size(); ++i)
    if (!ref.is_output[i]) h = fnv1a(h, ref.args[i].data(), ref.args[i].nbytes());
  return h;
}

uint64_t outputs_bytes(const Reference& ref) {
  uint64_t n = 0;
  for (size_t i = 0; i < ref.args.size(); ++i)
    if (ref.is_output[i]) n += ref.args[i].nbytes();
  return n;
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shape_text(uint8_t kind, uint8_t bits, const std::vector<int64_t>& dims) {
  DType t;
  t.kind = static_cast<DTypeKind>(kind);
  t.bits = bits;
  std::string s = (kind <= static_cast<uint8_t>(DTypeKind::Bool) ? to_string(t) : "dtype?") + "[";
  for (size_t d = 0; d < dims.size(); ++d)
    s += (d ? ", " : "") + std::to_string(dims[d]);
  return s + "]";
}

template <typename T> void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Why a file is not used.
struct Unusable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Reader {
public:
  explicit Reader(std::ifstream& in) : in_(in) {}
  template <typename T> T get(const char* what) {
    T v{};
    bytes(&v, sizeof v, what);
    return v;
  }
  void bytes(void* p, size_t n, const char* what) {
    in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in_.gcount()) != n)
      throw Unusable(std::string("truncated (ends inside the ") + what + ")");
  }

private:
  std::ifstream& in_;
};

// Fills the outputs of `ref` (as reference_inputs made it) from `file`, or throws Unusable.
void load(const std::string& file, uint64_t hash, uint64_t seed, Reference& ref) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Unusable("cannot be opened");
  Reader r(in);
  char magic[sizeof kMagic];
  r.bytes(magic, sizeof magic, "magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw Unusable("not a reference file");
  auto version = r.get<uint32_t>("header");
  if (version != kReferenceCacheVersion)
    throw Unusable("format version " + std::to_string(version) + ", expected " +
                   std::to_string(kReferenceCacheVersion));
  auto nparams = r.get<uint32_t>("header");
  auto file_hash = r.get<uint64_t>("header");
  auto file_seed = r.get<uint64_t>("header");
  auto file_inputs = r.get<uint64_t>("header");
  auto seconds = r.get<double>("header");
  if (nparams > kMaxParams)
    throw Unusable("damaged header (" + std::to_string(nparams) + " params)");
  if (nparams != ref.args.size())
    throw Unusable("holds " + std::to_string(nparams) + " params, the workload has " +
                   std::to_string(ref.args.size()));
  for (uint32_t i = 0; i < nparams; ++i) {
    auto kind = r.get<uint8_t>("param table");
    auto bits = r.get<uint8_t>("param table");
    auto is_output = r.get<uint8_t>("param table");
    r.get<uint8_t>("param table");
    auto ndim = r.get<uint32_t>("param table");
    if (ndim > kMaxDims) throw Unusable("damaged header (" + std::to_string(ndim) + " dims)");
    std::vector<int64_t> dims(ndim);
    for (auto& d : dims)
      d = r.get<int64_t>("param table");
    const NDArray& a = ref.args[i];
    if (kind != static_cast<uint8_t>(a.dtype().kind) || bits != a.dtype().bits || dims != a.shape())
      throw Unusable("param " + std::to_string(i) + " is " + shape_text(kind, bits, dims) +
                     ", the workload's is " + a.shape_string());
    if ((is_output != 0) != ref.is_output[i])
      throw Unusable("param " + std::to_string(i) + " is " +
                     (is_output ? "an output" : "an input") + " there, not in the workload");
  }
  if (file_hash != hash)
    throw Unusable("written for workload hash " + hex16(file_hash) + ", not " + hex16(hash));
  if (file_seed != seed)
    throw Unusable("written for seed " + std::to_string(file_seed) + ", not " +
                   std::to_string(seed));
  if (file_inputs != inputs_checksum(ref))
    throw Unusable("its inputs differ from the ones generated now from the seed (input "
                   "generation changed?)");
  auto payload = r.get<uint64_t>("header");
  auto checksum = r.get<uint64_t>("header");
  if (payload != outputs_bytes(ref))
    throw Unusable("payload of " + std::to_string(payload) + " bytes, expected " +
                   std::to_string(outputs_bytes(ref)));
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < ref.args.size(); ++i) {
    if (!ref.is_output[i]) continue;
    r.bytes(ref.args[i].data(), ref.args[i].nbytes(), "payload");
    h = fnv1a(h, ref.args[i].data(), ref.args[i].nbytes());
  }
  if (in.peek() != std::char_traits<char>::eof())
    throw Unusable("trailing bytes after the payload");
  if (h != checksum) throw Unusable("payload checksum mismatch (damaged file)");
  ref.compute_seconds = seconds;
}

// Writes `ref` to `file` through a temporary file renamed into place; throws on failure.
void store(const std::string& file, uint64_t hash, uint64_t seed, const Reference& ref) {
  std::string head(kMagic, sizeof kMagic);
  put<uint32_t>(head, kReferenceCacheVersion);
  put<uint32_t>(head, static_cast<uint32_t>(ref.args.size()));
  put<uint64_t>(head, hash);
  put<uint64_t>(head, seed);
  put<uint64_t>(head, inputs_checksum(ref));
  put<double>(head, ref.compute_seconds);
  for (size_t i = 0; i < ref.args.size(); ++i) {
    const NDArray& a = ref.args[i];
    put<uint8_t>(head, static_cast<uint8_t>(a.dtype().kind));
    put<uint8_t>(head, a.dtype().bits);
    put<uint8_t>(head, ref.is_output[i] ? 1 : 0);
    put<uint8_t>(head, 0);
    put<uint32_t>(head, static_cast<uint32_t>(a.ndim()));
    for (int64_t d : a.shape())
      put<int64_t>(head, d);
  }
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < ref.args.size(); ++i)
    if (ref.is_output[i]) h = fnv1a(h, ref.args[i].data(), ref.args[i].nbytes());
  put<uint64_t>(head, outputs_bytes(ref));
  put<uint64_t>(head, h);

  fs::path dir = fs::path(file).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create directory '" + dir.string() + "': " + ec.message());
  // Unique per process and call: concurrent writers of the same file never share a temporary.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = file + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot create '" + tmp + "': " + std::strerror(errno));
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    for (size_t i = 0; i < ref.args.size(); ++i)
      if (ref.is_output[i])
        out.write(static_cast<const char*>(ref.args[i].data()),
                  static_cast<std::streamsize>(ref.args[i].nbytes()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw std::runtime_error("writing '" + tmp + "' failed (disk full?)");
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("renaming '" + tmp + "' into place failed: " + ec.message());
  }
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

} // namespace

std::string default_reference_cache_dir() {
  fs::path base;
  if (std::string d = env("METATUNE_CACHE_DIR"); !d.empty())
    base = d;
  else if (std::string x = env("XDG_CACHE_HOME"); !x.empty())
    base = fs::path(x) / "metatune";
  else if (std::string h = env("HOME"); !h.empty())
    base = fs::path(h) / ".cache" / "metatune";
  else
    return "";
  return (base / "reference").string();
}

std::string reference_cache_file(const std::string& cache_dir, const Function& workload,
                                 uint64_t seed, const std::string& evaluator) {
  std::string by;
  for (char c : evaluator) // a file-name-safe spelling of the evaluator's name
    by += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '_';
  return (fs::path(cache_dir) /
          (hex16(structural_hash(workload)) + "-s" + std::to_string(seed) +
           (by.empty() ? "" : "-" + by) + "-v" + std::to_string(kReferenceCacheVersion) + ".mtref"))
      .string();
}

Reference load_or_compute_reference(const Function& workload, uint64_t seed,
                                    const std::string& cache_dir, int threads,
                                    ReferenceCacheInfo* info,
                                    const Reference::Evaluator* evaluator) {
  ReferenceCacheInfo local;
  ReferenceCacheInfo& out = info ? *info : local;
  out = {};
  auto t0 = Clock::now();
  auto done = [&] { out.seconds = std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto compute = [&] {
    return evaluator ? Reference::compute_with(workload, seed, *evaluator)
                     : Reference::compute(workload, seed, threads);
  };
  if (cache_dir.empty()) {
    Reference ref = compute();
    done();
    return ref;
  }

  uint64_t hash = structural_hash(workload);
  out.file = reference_cache_file(cache_dir, workload, seed, evaluator ? evaluator->name : "");
  std::error_code ec;
  if (fs::exists(out.file, ec)) {
    Reference ref = reference_inputs(workload, seed);
    try {
      load(out.file, hash, seed, ref);
      out.from_cache = true;
      done();
      return ref;
    } catch (const Unusable& e) {
      out.load_problem = e.what();
      spdlog::warn("reference cache file '{}' not used: {}; computing the reference again",
                   out.file, out.load_problem);
    }
  }

  Reference ref = compute();
  try {
    store(out.file, hash, seed, ref);
    out.stored = true;
    spdlog::debug("reference stored in '{}'", out.file);
  } catch (const std::exception& e) {
    out.store_problem = e.what();
    spdlog::warn("reference cache '{}' not written: {}", out.file, out.store_problem);
  }
  done();
  return ref;
}

} // namespace mt
