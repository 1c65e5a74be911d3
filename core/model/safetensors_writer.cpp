#include "core/model/safetensors_writer.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/model/safetensors_error.h"
#include "core/support/utf8.h"

namespace mt {
namespace {

// The order of the tensors in the file, their offsets and the header bytes (8-byte length,
// JSON, padding) for a set of tensors, once they are checked.
class SafetensorsLayout {
public:
  SafetensorsLayout(std::string path, std::span<const SafetensorsTensor> tensors,
                    const std::map<std::string, std::string>& metadata)
      : path_(std::move(path)), tensors_(tensors) {
    check_tensors();
    check_metadata(metadata);
    order_tensors();
    build_header(metadata);
  }

  const std::string& header() const { return header_; }
  const std::vector<size_t>& order() const { return order_; }
  uint64_t data_size() const { return data_size_; }

private:
  void check_text(const std::string& tensor, const std::string& what, const std::string& text) {
    if (auto bad = first_invalid_utf8(text))
      throw SafetensorsError(path_, tensor,
                             what + " is not valid UTF-8 (ill-formed at byte " +
                                 std::to_string(*bad) + ")");
  }

  void check_tensors() {
    std::set<std::string_view> seen;
    for (const SafetensorsTensor& t : tensors_) {
      if (t.name == "__metadata__")
        throw SafetensorsError(path_, t.name, "the name is reserved for the metadata");
      check_text(t.name, "the name", t.name);
      if (!seen.insert(t.name).second)
        throw SafetensorsError(path_, t.name, "two tensors have this name");
      uint64_t count = 1;
      for (size_t i = 0; i < t.shape.size(); ++i) {
        if (t.shape[i] < 0)
          throw SafetensorsError(path_, t.name,
                                 "shape[" + std::to_string(i) + "] is " +
                                     std::to_string(t.shape[i]) + ", negative");
        if (__builtin_mul_overflow(count, static_cast<uint64_t>(t.shape[i]), &count))
          throw SafetensorsError(path_, t.name, "the shape has more than 2^64 elements");
      }
      uint64_t nbytes = 0;
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(item_size(t.dtype)), &nbytes) ||
          nbytes != t.data.size())
        throw SafetensorsError(path_, t.name,
                               std::to_string(t.data.size()) + " bytes of data, but " +
                                   std::to_string(count) + " elements of " + to_string(t.dtype) +
                                   " need " + std::to_string(count * item_size(t.dtype)));
    }
  }

  void check_metadata(const std::map<std::string, std::string>& metadata) {
    for (const auto& [key, value] : metadata) {
      check_text("", "__metadata__ key '" + key + "'", key);
      check_text("", "__metadata__ '" + key + "' value", value);
    }
  }

  // Decreasing dtype rank (which is increasing alignment, see SafetensorsDtype), then by name,
  // as the reference writer does: with the header padded to 8, every tensor starts aligned.
  void order_tensors() {
    order_.resize(tensors_.size());
    for (size_t i = 0; i < order_.size(); ++i)
      order_[i] = i;
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      const SafetensorsTensor& x = tensors_[a];
      const SafetensorsTensor& y = tensors_[b];
      if (x.dtype != y.dtype) return x.dtype > y.dtype;
      return x.name < y.name;
    });
  }

  static std::string quoted(const std::string& text) {
    return nlohmann::json(text).dump(); // escapes; UTF-8 was checked
  }

  void build_header(const std::map<std::string, std::string>& metadata) {
    std::string json = "{";
    bool first = true;
    if (!metadata.empty()) {
      json += "\"__metadata__\":{";
      for (const auto& [key, value] : metadata) {
        if (!first) json += ',';
        first = false;
        json += quoted(key) + ":" + quoted(value);
      }
      json += '}';
      first = false;
    }
    uint64_t offset = 0;
    for (size_t i : order_) {
      const SafetensorsTensor& t = tensors_[i];
      if (!first) json += ',';
      first = false;
      json += quoted(t.name) + ":{\"dtype\":\"" + to_string(t.dtype) + "\",\"shape\":[";
      for (size_t d = 0; d < t.shape.size(); ++d)
        json += (d ? "," : "") + std::to_string(t.shape[d]);
      const uint64_t end = offset + t.data.size();
      json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
      offset = end;
    }
    json += '}';
    json.append((8 - json.size() % 8) % 8, ' ');
    data_size_ = offset;

    header_.resize(8);
    uint64_t n = json.size();
    for (int i = 0; i < 8; ++i)
      header_[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    header_ += json;
  }

  std::string path_;
  std::span<const SafetensorsTensor> tensors_;
  std::vector<size_t> order_;
  std::string header_;
  uint64_t data_size_ = 0;
};

// The temporary file a write goes to: removed again unless committed.
class TemporaryFile {
public:
  explicit TemporaryFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    path_ = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    do {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) fail("cannot create");
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("cannot write");
      p += n;
      size -= static_cast<size_t>(n);
    }
  }

  // Flushes the contents to disk before the rename makes them visible under the target's
  // name, and the folder's entry after it.
  void commit() {
    if (::fsync(fd_) != 0) fail("cannot flush");
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("cannot close");
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot rename into place");
    committed_ = true;
    const auto slash = target_.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : target_.substr(0, slash + 1);
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir); // best effort: the file itself is complete either way
      ::close(dir);
    }
  }

private:
  // `what` failed on the temporary file; errno says why.
  [[noreturn]] void fail(const char* what) {
    const int err = errno;
    throw SafetensorsError(target_, "",
                           std::string(what) + " the temporary file '" + path_ +
                               "': " + std::strerror(err));
  }

  std::string target_, path_;
  int fd_ = -1;
  bool committed_ = false;
};

} // namespace

std::vector<std::byte> serialize_safetensors(std::span<const SafetensorsTensor> tensors,
                                             const std::map<std::string, std::string>& metadata) {
  SafetensorsLayout layout("<memory>", tensors, metadata);
  std::vector<std::byte> out;
  out.reserve(layout.header().size() + layout.data_size());
  for (char c : layout.header())
    out.push_back(static_cast<std::byte>(c));
  for (size_t i : layout.order())
    out.insert(out.end(), tensors[i].data.begin(), tensors[i].data.end());
  return out;
}

void write_safetensors(const std::string& path, std::span<const SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
  SafetensorsLayout layout(path, tensors, metadata);
  TemporaryFile file(path);
  file.write(layout.header().data(), layout.header().size());
  for (size_t i : layout.order())
    file.write(tensors[i].data.data(), tensors[i].data.size());
  file.commit();
}

} // namespace mt
