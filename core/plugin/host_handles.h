// Private to core/plugin: what the opaque handles of the plugin ABI are on the host side, and
// the conversions between core's IR nodes and the borrowed node handles (mt_stmt, mt_expr,
// mt_buffer are the core nodes themselves, seen through incomplete C types).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/function.h"
#include "core/schedule/random.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/te.h"
#include "metatune/plugin_api.h"

// Intrusively reference-counted: the C side holds raw pointers, retain/release count them.
struct mt_schedule_s {
  explicit mt_schedule_s(std::shared_ptr<mt::Schedule> s) : sch(std::move(s)) {}
  std::shared_ptr<mt::Schedule> sch;
  std::atomic<int> refs{1};
  // Copies of the function as it was when nodes were handed out: borrowed node handles stay
  // valid while this handle lives, even after later primitives rebuild the tree.
  mutable std::vector<std::shared_ptr<const mt::Function>> pinned_funcs;
  mutable std::deque<std::string> strings;
  mutable std::deque<std::vector<const mt_expr*>> expr_arrays;

  // The result of a list lookup (get_loops, ...) whose caller asked for the count first or
  // gave too small an array: the follow-up call with the same arguments gets it from here, so
  // the lookup is recorded in the trace once. Any other schedule call drops it.
  struct PendingList {
    int kind = 0;
    int32_t arg = 0;
    std::vector<int32_t> ids;
  };
  std::optional<PendingList> pending;

  // Cache behind schedule_features (ABI 1.1): the matrix of the function whose body is
  // `body` (held, so that its address cannot be reused by a later version of the function).
  struct FeatureCache {
    mt::Stmt body;
    size_t num_buffers = 0;
    size_t rows = 0, cols = 0;
    std::vector<float> data;
  };
  std::optional<FeatureCache> features;

  // Blocks and loops found by realize_of / loop_of (host_api_analysis.cpp) in the function
  // whose body is `lookups_body`: a plugin asks about one block or loop many times between two
  // primitives (each iter var, each annotation), and the body, pinned, cannot be reused by
  // another version of the function.
  mutable const mt::StmtNode* lookups_body = nullptr;
  mutable std::unordered_map<int32_t, const mt::BlockRealizeNode*> realizes;
  mutable std::unordered_map<int32_t, const mt::ForNode*> loops;

  // Pins the current function (once per version of it).
  void pin_current() const;
};

struct mt_schedule_list_s {
  std::vector<mt_schedule*> items; // each holds one reference
  ~mt_schedule_list_s();
};

struct mt_trace_s {
  explicit mt_trace_s(mt::Trace t) : trace(std::move(t)) {}
  mt::Trace trace;
  std::atomic<int> refs{1};
  mutable std::string json; // cache behind trace_to_json
};

struct mt_rng_s {
  mt::RandomEngine* rng = nullptr; // borrowed from the caller for the duration of a call
};

struct mt_program_s {
  explicit mt_program_s(mt::Function f) : func(std::move(f)) {}
  mt::Function func;
  std::atomic<int> refs{1};
};

struct mt_tune_context_s {
  mt::Annotations attrs; // key -> int or string
};

struct mt_te_tensor_s {
  mt::te::Tensor tensor;
};

struct mt_te_builder_s {
  std::atomic<int> refs{1};
  std::unordered_map<const mt::ExprNode*, mt::Expr> exprs; // everything made or seen here
  std::unordered_map<const mt::ExprNode*, mt::te::Var> reduce_axes;
  std::deque<mt_te_tensor_s> tensors;
  std::deque<std::vector<const mt_expr*>> expr_arrays;

  const mt_expr* keep(const mt::Expr& e);
  mt::Expr get(const mt_expr* e, const char* what) const; // throws if not from this builder
  const mt_te_tensor* keep(const mt::te::Tensor& t);
};

namespace mt::plugin_detail {

inline const mt_stmt* handle(const StmtNode* s) {
  return reinterpret_cast<const mt_stmt*>(s);
}
inline const mt_expr* handle(const ExprNode* e) {
  return reinterpret_cast<const mt_expr*>(e);
}
inline const mt_buffer* handle(const BufferNode* b) {
  return reinterpret_cast<const mt_buffer*>(b);
}
inline const StmtNode* node(const mt_stmt* s) {
  return reinterpret_cast<const StmtNode*>(s);
}
inline const ExprNode* node(const mt_expr* e) {
  return reinterpret_cast<const ExprNode*>(e);
}
inline const BufferNode* node(const mt_buffer* b) {
  return reinterpret_cast<const BufferNode*>(b);
}

inline mt_str str(const std::string& s) {
  return mt_str{s.data(), s.size()};
}
inline std::string_view view(mt_str s) {
  return s.data ? std::string_view(s.data, s.size) : std::string_view();
}
mt_dtype to_c(DType t);
// Writes annotation i (in key order) of `anns`; throws ApiError if out of range.
void fill_annotation(const Annotations& anns, size_t i, mt_str* key, mt_ann_value* value);
DType from_c(mt_dtype t);

// Fills a (out, capacity, count) output; returns the status the convention asks for.
// Throws ApiError(MT_ERROR_BUFFER_TOO_SMALL) after a partial fill.
void throw_too_small(size_t needed, size_t capacity);
template <typename C, typename T, typename F>
void fill_array(const std::vector<T>& items, C* out, size_t capacity, size_t* count, F convert) {
  if (count) *count = items.size();
  if (!out && capacity == 0) return;
  if (!out) throw std::invalid_argument("output array is NULL but capacity is not 0");
  size_t n = items.size() < capacity ? items.size() : capacity;
  for (size_t i = 0; i < n; ++i)
    out[i] = convert(items[i]);
  if (items.size() > capacity) throw_too_small(items.size(), capacity);
}

// The parts of the host API table, each filled by the file that implements it.
void fill_schedule_api(mt_host_api& api);
void fill_analysis_api(mt_host_api& api);
void fill_program_api(mt_host_api& api);
void fill_trace_api(mt_host_api& api);
void fill_te_api(mt_host_api& api);
void fill_features_api(mt_host_api& api); // ABI 1.1
void fill_search_api(mt_host_api& api);   // ABI 1.3
void fill_layer_api(mt_host_api& api);    // ABI 1.5

} // namespace mt::plugin_detail

namespace mt::plugin_detail {

// A failure with the status it maps to, thrown inside host API functions.
class ApiError : public std::runtime_error {
public:
  ApiError(mt_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  mt_status status() const { return status_; }

private:
  mt_status status_;
};

// Runs the body of a host API function: no exception leaves it; failures become a status
// plus the thread's last-error message, prefixed with the function's name.
mt_status report_current_exception(const char* fn) noexcept;
template <typename F> mt_status guard(const char* fn, F&& body) noexcept {
  try {
    body();
    return MT_OK;
  } catch (...) {
    return report_current_exception(fn);
  }
}

// Throws ApiError(MT_ERROR_INVALID_ARGUMENT) naming `what` if `p` is null.
template <typename T> T* require(T* p, const char* what) {
  if (!p) throw ApiError(MT_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return p;
}

} // namespace mt::plugin_detail
