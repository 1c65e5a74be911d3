#include "core/support/mapped_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mt {
namespace {

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::invalid_argument("cannot map '" + path + "': " + why);
}

} // namespace

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
  int fd;
  do {
    fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(path_, std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path_, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path_, "it is a directory");
  if (!S_ISREG(st.st_mode)) fail(path_, "not a regular file");
  if (st.st_size < 0 || static_cast<uintmax_t>(st.st_size) > std::numeric_limits<size_t>::max())
    fail(path_, "the file is larger than the address space");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return; // mmap refuses length 0; an empty span says the same
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    size_ = 0;
    fail(path_, std::string("mmap: ") + std::strerror(errno));
  }
  data_ = p;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  unmap();
}

void MappedFile::unmap() noexcept {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

} // namespace mt
