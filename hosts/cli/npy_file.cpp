// .npy writer (see npy_file.h); the format:
// numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include "hosts/cli/npy_file.h"

#include <fstream>
#include <stdexcept>

namespace mt::cli {

void save_npy(const NDArray& a, const std::string& path) {
  std::string descr;
  if (a.dtype() == DType::f32())
    descr = "<f4";
  else if (a.dtype() == DType::f64())
    descr = "<f8";
  else if (a.dtype() == DType::i32())
    descr = "<i4";
  else if (a.dtype() == DType::i64())
    descr = "<i8";
  else
    throw std::invalid_argument("save_npy: " + a.shape_string() + " has no .npy dtype here");
  std::string shape;
  for (int64_t d : a.shape())
    shape += std::to_string(d) + ", ";
  if (a.ndim() > 1) shape.erase(shape.size() - 2); // (n,) keeps its comma, (a, b) has none
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' padded to a multiple of 64.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, sizeof magic);
  auto len = static_cast<uint16_t>(header.size());
  const char len_bytes[] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out << header;
  out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

} // namespace mt::cli
