// A whole file mapped read-only into memory (POSIX mmap), so that large weight files are read
// lazily by the page cache and shared between processes instead of copied. The mapping stays
// valid while the object lives; a file truncated by someone else meanwhile is outside what a
// mapping can protect against (reads past the new end raise SIGBUS).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace mt {

class MappedFile {
public:
  MappedFile() = default;
  // Maps all of `path`. Throws std::invalid_argument naming the path and the reason (missing,
  // unreadable, a directory, not a regular file, mmap failing).
  explicit MappedFile(std::string path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Empty for an empty file (which has nothing to map).
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  const std::string& path() const { return path_; }

private:
  void unmap() noexcept;

  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

} // namespace mt
