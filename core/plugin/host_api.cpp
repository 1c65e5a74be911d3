#include "core/plugin/host_api.h"

#include <cstdio>
#include <mutex>
#include <new>

#include "core/plugin/host_handles.h"
#include "core/plugin/last_error.h"
#include "core/plugin/plugin_messages.h"
#include "core/support/check.h"

// ---- handle helpers -------------------------------------------------------------------------

void mt_schedule_s::pin_current() const {
  const mt::Function& f = sch->func();
  if (!pinned_funcs.empty() && pinned_funcs.back()->body == f.body &&
      pinned_funcs.back()->buffers.size() == f.buffers.size())
    return;
  pinned_funcs.push_back(std::make_shared<const mt::Function>(f));
}

mt_schedule_list_s::~mt_schedule_list_s() {
  for (mt_schedule* s : items)
    mt::host_api()->schedule_release(s);
}

const mt_expr* mt_te_builder_s::keep(const mt::Expr& e) {
  if (!e) return nullptr;
  exprs.emplace(e.get(), e);
  return mt::plugin_detail::handle(e.get());
}

mt::Expr mt_te_builder_s::get(const mt_expr* e, const char* what) const {
  using mt::plugin_detail::ApiError;
  if (!e) throw ApiError(MT_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  auto it = exprs.find(mt::plugin_detail::node(e));
  if (it == exprs.end())
    throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                   std::string(what) + " was not made by this tensor-expression builder");
  return it->second;
}

const mt_te_tensor* mt_te_builder_s::keep(const mt::te::Tensor& t) {
  tensors.push_back(mt_te_tensor_s{t});
  return &tensors.back();
}

namespace mt {

namespace plugin_detail {

mt_status report_current_exception(const char* fn) noexcept {
  auto fail = [fn](mt_status status, const char* what) {
    set_last_error(std::string(fn) + ": " + what);
    return status;
  };
  try {
    throw;
  } catch (const InternalError& e) {
    return fail(MT_ERROR_INTERNAL, e.what());
  } catch (const ApiError& e) {
    return fail(e.status(), e.what());
  } catch (const ScheduleError& e) {
    return fail(MT_ERROR_SCHEDULE, e.what());
  } catch (const TraceParseError& e) {
    return fail(MT_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return fail(MT_ERROR_OUT_OF_RANGE, e.what());
  } catch (const std::invalid_argument& e) {
    return fail(MT_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(MT_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(MT_ERROR_UNKNOWN, e.what());
  } catch (...) {
    return fail(MT_ERROR_INTERNAL, "unknown exception");
  }
}

void throw_too_small(size_t needed, size_t capacity) {
  throw ApiError(MT_ERROR_BUFFER_TOO_SMALL, "output needs " + std::to_string(needed) +
                                                " entries, capacity is " +
                                                std::to_string(capacity));
}

mt_dtype to_c(DType t) {
  mt_dtype d{};
  d.code = static_cast<uint8_t>(to_dtype_code(t.kind));
  d.bits = t.bits;
  d.lanes = 1;
  return d;
}

DType from_c(mt_dtype d) {
  DType t;
  std::optional<DTypeKind> kind = from_dtype_code(d.code);
  if (!kind)
    throw ApiError(MT_ERROR_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(d.code));
  t.kind = *kind;
  if (d.lanes > 1)
    throw ApiError(MT_ERROR_INVALID_ARGUMENT, "vector dtypes (lanes > 1) are not IR types");
  t.bits = d.bits;
  return t;
}

void fill_annotation(const Annotations& anns, size_t i, mt_str* key, mt_ann_value* value) {
  if (i >= anns.size())
    throw ApiError(MT_ERROR_OUT_OF_RANGE,
                   "annotation " + std::to_string(i) + " of " + std::to_string(anns.size()));
  auto it = anns.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(i));
  if (key) *key = str(it->first);
  if (!value) return;
  *value = mt_ann_value{};
  if (const auto* v = std::get_if<int64_t>(&it->second)) {
    value->kind = MT_ANN_INT;
    value->int_value = *v;
  } else {
    value->kind = MT_ANN_STRING;
    value->str_value = str(std::get<std::string>(it->second));
  }
}

namespace {

const char* api_last_error() {
  return mt::last_error();
}
void api_set_last_error(mt_str message) {
  mt::set_last_error(view(message));
}
void api_log(mt_log_level level, mt_str message) {
  try {
    log_plugin_message(level, view(message));
  } catch (...) { // a failing sink must not take the plugin down
  }
}

} // namespace

} // namespace plugin_detail

namespace {

std::mutex g_sink_mutex;
LogSink g_sink; // empty = default

} // namespace

void set_plugin_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = std::move(sink);
}

void plugin_log(int level, std::string_view message) {
  LogSink sink;
  {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    sink = g_sink;
  }
  if (sink) {
    sink(level, message);
    return;
  }
  if (level < MT_LOG_WARNING) return;
  std::fprintf(stderr, "metatune: %s: %.*s\n", level >= MT_LOG_ERROR ? "error" : "warning",
               static_cast<int>(message.size()), message.data());
}

const mt_host_api* host_api() {
  static const mt_host_api table = [] {
    mt_host_api t{};
    t.struct_size = sizeof(mt_host_api);
    t.struct_version = 1;
    t.abi_version = MT_PLUGIN_ABI_VERSION;
    t.last_error = plugin_detail::api_last_error;
    t.set_last_error = plugin_detail::api_set_last_error;
    t.log = plugin_detail::api_log;
    plugin_detail::fill_schedule_api(t);
    plugin_detail::fill_analysis_api(t);
    plugin_detail::fill_trace_api(t);
    plugin_detail::fill_program_api(t);
    plugin_detail::fill_te_api(t);
    plugin_detail::fill_features_api(t);
    plugin_detail::fill_search_api(t);
    plugin_detail::fill_layer_api(t);
    return t;
  }();
  return &table;
}

mt_schedule* make_schedule_handle(std::shared_ptr<Schedule> sch) {
  MT_ICHECK(sch, "make_schedule_handle: null schedule");
  return new mt_schedule_s(std::move(sch));
}

std::shared_ptr<Schedule> schedule_of(const mt_schedule* handle) {
  if (!handle) throw std::invalid_argument("schedule_of: null handle");
  return handle->sch;
}

mt_program* make_program_handle(Function func) {
  return new mt_program_s(std::move(func));
}

const Function& function_of(const mt_program* handle) {
  if (!handle) throw std::invalid_argument("function_of: null handle");
  return handle->func;
}

mt_trace* make_trace_handle(Trace trace) {
  return new mt_trace_s(std::move(trace));
}

const Trace& trace_of(const mt_trace* handle) {
  if (!handle) throw std::invalid_argument("trace_of: null handle");
  return handle->trace;
}

} // namespace mt
