// The feature part of the host API table (ABI 1.1): core's per-store features
// (core/features/features.h) of a schedule's current function, computed once per version of
// the function and cached on the schedule handle, for cost-model plugins.
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/features/features.h"

namespace mt::plugin_detail {

namespace {

mt_status schedule_features(mt_schedule* h, const float** data, size_t* rows, size_t* cols) {
  return guard("schedule_features", [&] {
    require(h, "schedule");
    require(data, "data");
    require(rows, "rows");
    require(cols, "cols");
    const Function& f = h->sch->func();
    // Primitives rebuild the (immutable) tree, so a new root means a new function; the buffer
    // count catches a change that only adds a buffer.
    auto& cache = h->features;
    if (!cache || cache->body != f.body || cache->num_buffers != f.buffers.size()) {
      FeatureMatrix m = extract_feature_matrix(f);
      cache =
          mt_schedule_s::FeatureCache{f.body, f.buffers.size(), m.rows, m.cols, std::move(m.data)};
    }
    *data = cache->data.data();
    *rows = cache->rows;
    *cols = cache->cols;
  });
}

} // namespace

void fill_features_api(mt_host_api& api) {
  api.schedule_features = schedule_features;
}

} // namespace mt::plugin_detail
