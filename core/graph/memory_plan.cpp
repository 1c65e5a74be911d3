// Static memory plan (see memory_plan.h).
#include "core/graph/memory_plan.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace mt {

namespace {

size_t align_up(size_t n) {
  return (n + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

bool lifetimes_overlap(const PlannedBuffer& a, const PlannedBuffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

bool bytes_overlap(const PlannedBuffer& a, const PlannedBuffer& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

} // namespace

void MemoryPlan::verify() const {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlannedBuffer& a = buffers[i];
    if (a.offset % kAlignment || a.offset + a.bytes > arena_bytes)
      throw std::logic_error("memory plan: buffer of '" + a.tensor->buffer->name +
                             "' misplaced (a bug in metatune)");
    for (size_t j = i + 1; j < buffers.size(); ++j)
      if (lifetimes_overlap(a, buffers[j]) && bytes_overlap(a, buffers[j]))
        throw std::logic_error("memory plan: '" + a.tensor->buffer->name + "' and '" +
                               buffers[j].tensor->buffer->name +
                               "' live at once in the same bytes (a bug in metatune)");
  }
}

MemoryPlan plan_memory(const std::vector<FusedGroup>& groups,
                       const std::vector<te::Tensor>& outputs) {
  std::set<const te::TensorNode*> model_outputs;
  for (const te::Tensor& t : outputs)
    model_outputs.insert(t.get());
  std::unordered_map<const te::TensorNode*, size_t> index;
  MemoryPlan plan;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const te::Tensor& t : groups[g].outputs) {
      if (model_outputs.count(t.get()) || index.count(t.get())) continue;
      index[t.get()] = plan.buffers.size();
      size_t elements = 1;
      for (int64_t d : t.shape())
        elements *= static_cast<size_t>(d);
      size_t bytes = align_up(elements * t.dtype().bytes());
      plan.buffers.push_back({t.get(), bytes, 0, g, g});
      plan.unplanned_bytes += bytes;
    }
    for (const te::Tensor& t : groups[g].inputs)
      if (auto it = index.find(t.get()); it != index.end()) plan.buffers[it->second].last = g;
  }

  std::vector<size_t> order(plan.buffers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].bytes > plan.buffers[b].bytes;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    PlannedBuffer& b = plan.buffers[i];
    // The busy ranges of the placed buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (lifetimes_overlap(b, plan.buffers[j]))
        busy.emplace_back(plan.buffers[j].offset, plan.buffers[j].offset + plan.buffers[j].bytes);
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + b.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    placed.push_back(i);
  }
  return plan;
}

} // namespace mt
