// storage_align at lowering: the schedule primitive leaves a block annotation
// "storage_align.<buffer>.<axis>" = "<factor>:<offset>"; blocks are gone after lower_blocks, so
// lower() collects the annotations first and compaction applies them to the buffer's compacted
// shape. Padding is done by widening the dimension after `axis` (elements that are never
// touched), which gives that axis the stride asked for while every index, every consumer of a
// buffer's shape (interpreter, code generators, alignment proofs) and every flattening rule
// stay as they are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/stmt.h"

namespace mt {

struct StorageAlign {
  int axis = 0;
  int64_t factor = 1, offset = 0;
};
// Buffer name -> its alignments, in the order the annotations name them.
using StorageAligns = std::map<std::string, std::vector<StorageAlign>>;

// The block annotation Schedule::storage_align leaves: key "storage_align.<buffer>.<axis>",
// value "<factor>:<offset>" (the one definition of the format collect_storage_aligns reads).
std::pair<std::string, std::string> storage_align_annotation(const std::string& buffer, int axis,
                                                             int64_t factor, int64_t offset);

// The storage_align annotations of every block under `body` (before lower_blocks). A malformed
// annotation (hand-written IR) throws std::invalid_argument naming the block and the key.
StorageAligns collect_storage_aligns(const Stmt& body);

// `shape` with each alignment applied in turn: the dimension after `axis` widened to the
// smallest extent that makes stride(axis) % factor == offset, if one below extent + factor
// exists (it may not: stride(axis + 1) and factor can share a factor that offset lacks). An
// alignment of the innermost axis (stride 1, nothing to widen) is ignored.
std::vector<int64_t> aligned_shape(std::vector<int64_t> shape,
                                   const std::vector<StorageAlign>& aligns);

// Pass 3 with the alignments applied to each allocated buffer named in `aligns`.
Stmt compact_buffers(const Stmt& body, const StorageAligns& aligns);

} // namespace mt
