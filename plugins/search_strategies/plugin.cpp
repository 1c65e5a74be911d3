// The search_strategies plugin: registers the built-in strategies.
#include "metatune/sdk.hpp"

#include "evolutionary_search.hpp"
#include "replay_trace_search.hpp"

METATUNE_PLUGIN("search_strategies", "1.0", "The built-in search strategies") {
  registry.add<mt::search::EvolutionarySearch>(
      "search.Evolutionary",
      "MetaSchedule's evolutionary search: a population of measured and fresh samples evolved "
      "by mutation, ranked by the cost model, with an epsilon-greedy random share");
  registry.add<mt::search::ReplayTraceSearch>(
      "search.ReplayTrace", "Fresh random samples of the design spaces: the baseline");
}
