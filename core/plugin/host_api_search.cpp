// The search part of the host API table (ABI 1.3): a search strategy's context and its
// candidates, forwarded to the task's SearchBackend (search_backend.h).
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/plugin/search_backend.h"

namespace mt::plugin_detail {

namespace {

void release_trace_handle(mt_trace_s* t) {
  host_api()->trace_release(t);
}

SearchBackend& backend_of(const mt_search_context* ctx) {
  return *require(ctx, "search context")->backend;
}

std::vector<const SearchCandidate*> candidates_of(const mt_candidate* const* c, size_t n) {
  std::vector<const SearchCandidate*> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    require(c[i], "candidate");
    out.push_back(require(c[i]->candidate.get(), "candidate"));
  }
  return out;
}

void hand_out(const std::vector<CandidatePtr>& results, size_t n, mt_candidate** out) {
  if (results.size() != n)
    throw ApiError(MT_ERROR_INTERNAL, "the search backend returned " +
                                          std::to_string(results.size()) + " results for " +
                                          std::to_string(n) + " jobs (a bug in metatune)");
  for (size_t i = 0; i < n; ++i)
    out[i] = results[i] ? new mt_candidate_s(results[i]) : nullptr;
}

size_t search_num_design_spaces(const mt_search_context* ctx) {
  return ctx ? ctx->backend->num_design_spaces() : 0;
}
size_t search_num_mutators(const mt_search_context* ctx) {
  return ctx ? ctx->backend->num_mutators() : 0;
}
double search_mutator_probability(const mt_search_context* ctx, size_t m) {
  return ctx && m < ctx->backend->num_mutators() ? ctx->backend->mutator_probability(m) : 0.0;
}
int32_t search_has_cost_model(const mt_search_context* ctx) {
  return ctx && ctx->backend->has_cost_model() ? 1 : 0;
}
uint64_t search_seed(const mt_search_context* ctx) {
  return ctx ? ctx->backend->seed() : 0;
}
size_t search_num_measured(const mt_search_context* ctx) {
  return ctx ? ctx->backend->num_measured() : 0;
}

mt_status search_measured(const mt_search_context* ctx, size_t index, const mt_trace** trace,
                          double* seconds) {
  return guard("search_measured", [&] {
    SearchBackend& b = backend_of(ctx);
    if (index >= b.num_measured())
      throw ApiError(MT_ERROR_OUT_OF_RANGE,
                     "record " + std::to_string(index) + " of " + std::to_string(b.num_measured()));
    auto& handles = const_cast<mt_search_context*>(ctx)->measured;
    while (handles.size() < b.num_measured())
      handles.emplace_back(nullptr, release_trace_handle);
    if (!handles[index]) handles[index].reset(make_trace_handle(b.measured_trace(index)));
    if (trace) *trace = handles[index].get();
    if (seconds) *seconds = b.measured_seconds(index);
  });
}

mt_status search_sample(mt_search_context* ctx, const uint64_t* seeds, size_t n,
                        mt_candidate** out) {
  return guard("search_sample", [&] {
    SearchBackend& b = backend_of(ctx);
    if (n == 0) return;
    require(seeds, "seeds");
    require(out, "out");
    hand_out(b.sample(std::vector<uint64_t>(seeds, seeds + n)), n, out);
  });
}

mt_status search_replay(mt_search_context* ctx, const mt_trace* const* traces,
                        const uint64_t* seeds, size_t n, mt_candidate** out) {
  return guard("search_replay", [&] {
    SearchBackend& b = backend_of(ctx);
    if (n == 0) return;
    require(traces, "traces");
    require(seeds, "seeds");
    require(out, "out");
    std::vector<const Trace*> ts;
    for (size_t i = 0; i < n; ++i)
      ts.push_back(&trace_of(require(traces[i], "trace")));
    hand_out(b.replay(ts, std::vector<uint64_t>(seeds, seeds + n)), n, out);
  });
}

mt_status search_mutate(mt_search_context* ctx, const mt_candidate* const* parents,
                        const size_t* mutators, const uint64_t* seeds, size_t n,
                        mt_candidate** out) {
  return guard("search_mutate", [&] {
    SearchBackend& b = backend_of(ctx);
    if (n == 0) return;
    require(parents, "parents");
    require(mutators, "mutators");
    require(seeds, "seeds");
    require(out, "out");
    for (size_t i = 0; i < n; ++i)
      if (mutators[i] >= b.num_mutators())
        throw ApiError(MT_ERROR_OUT_OF_RANGE, "mutator " + std::to_string(mutators[i]) + " of " +
                                                  std::to_string(b.num_mutators()));
    hand_out(b.mutate(candidates_of(parents, n), std::vector<size_t>(mutators, mutators + n),
                      std::vector<uint64_t>(seeds, seeds + n)),
             n, out);
  });
}

mt_status search_predict(mt_search_context* ctx, const mt_candidate* const* candidates, size_t n,
                         double* scores) {
  return guard("search_predict", [&] {
    SearchBackend& b = backend_of(ctx);
    if (!b.has_cost_model()) throw ApiError(MT_ERROR_UNSUPPORTED, "the task has no cost model");
    if (n == 0) return;
    require(candidates, "candidates");
    require(scores, "scores");
    std::vector<double> s = b.predict(candidates_of(candidates, n));
    if (s.size() != n)
      throw ApiError(MT_ERROR_PLUGIN, "the cost model returned " + std::to_string(s.size()) +
                                          " scores for " + std::to_string(n) + " candidates");
    std::copy(s.begin(), s.end(), scores);
  });
}

mt_status search_update_cost_model(mt_search_context* ctx, const mt_candidate* const* candidates,
                                   size_t n, const double* run_seconds) {
  return guard("search_update_cost_model", [&] {
    SearchBackend& b = backend_of(ctx);
    if (!b.has_cost_model()) throw ApiError(MT_ERROR_UNSUPPORTED, "the task has no cost model");
    if (n == 0) return;
    require(candidates, "candidates");
    require(run_seconds, "run_seconds");
    b.update_cost_model(candidates_of(candidates, n),
                        std::vector<double>(run_seconds, run_seconds + n));
  });
}

void search_count(mt_search_context* ctx, mt_str statistic, size_t n) {
  if (!ctx || !statistic.data) return;
  try {
    ctx->backend->count(std::string(statistic.data, statistic.size), n);
  } catch (...) {
  }
}

void search_count_refusal(mt_search_context* ctx, mt_str source, mt_str message) {
  if (!ctx) return;
  try {
    ctx->backend->count_refusal(source.data ? std::string(source.data, source.size) : "strategy",
                                message.data ? std::string(message.data, message.size) : "");
  } catch (...) {
  }
}

uint64_t candidate_hash(const mt_candidate* c) {
  return c && c->candidate ? c->candidate->hash : 0;
}

const mt_trace* candidate_trace(const mt_candidate* c) {
  if (!c || !c->candidate) return nullptr;
  try {
    auto* mc = const_cast<mt_candidate*>(c);
    if (!mc->trace) mc->trace = make_trace_handle(c->candidate->trace);
    return mc->trace;
  } catch (...) {
    return nullptr;
  }
}

mt_candidate* candidate_retain(const mt_candidate* c) {
  if (!c) return nullptr;
  try {
    return new mt_candidate_s(c->candidate);
  } catch (...) {
    return nullptr;
  }
}

void candidate_release(mt_candidate* c) {
  delete c;
}

mt_status candidate_list_push(mt_candidate_list* list, const mt_candidate* c) {
  return guard("candidate_list_push", [&] {
    require(list, "list");
    require(c, "candidate");
    list->items.push_back(require(c->candidate.get(), "candidate") ? c->candidate : nullptr);
  });
}

} // namespace

void fill_search_api(mt_host_api& api) {
  api.search_num_design_spaces = search_num_design_spaces;
  api.search_num_mutators = search_num_mutators;
  api.search_mutator_probability = search_mutator_probability;
  api.search_has_cost_model = search_has_cost_model;
  api.search_seed = search_seed;
  api.search_num_measured = search_num_measured;
  api.search_measured = search_measured;
  api.search_sample = search_sample;
  api.search_replay = search_replay;
  api.search_mutate = search_mutate;
  api.search_predict = search_predict;
  api.search_update_cost_model = search_update_cost_model;
  api.search_count = search_count;
  api.search_count_refusal = search_count_refusal;
  api.candidate_hash = candidate_hash;
  api.candidate_trace = candidate_trace;
  api.candidate_retain = candidate_retain;
  api.candidate_release = candidate_release;
  api.candidate_list_push = candidate_list_push;
}

} // namespace mt::plugin_detail

mt_candidate_s::~mt_candidate_s() {
  if (trace) mt::host_api()->trace_release(trace);
}
