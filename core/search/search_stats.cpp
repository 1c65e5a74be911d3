// SearchStats::diagnosis: the refusals behind a search, most frequent source first, so that a
// search that accepts nothing says which postprocessor or primitive to look at.
#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "core/search/search_strategy.h"

namespace mt {

std::string SearchStats::diagnosis() const {
  size_t refused = replay_failed + rejected;
  if (refused == 0 && reasons.empty()) return {};
  std::ostringstream os;
  if (sampled > 0)
    os << refused << " of " << sampled << " sampled candidates refused (" << rejected
       << " by a postprocessor, " << replay_failed << " by a schedule primitive during replay)";
  else
    os << "nothing sampled";
  // By source first: messages of one postprocessor differ in their numbers, the source not.
  std::vector<std::pair<std::string, size_t>> sources(refused_by.begin(), refused_by.end());
  std::stable_sort(sources.begin(), sources.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!sources.empty()) {
    os << "; most refused by: ";
    for (size_t i = 0; i < sources.size() && i < 3; ++i)
      os << (i ? ", " : "") << sources[i].first << " (" << sources[i].second << ")";
  }
  std::vector<std::pair<std::string, size_t>> top(reasons.begin(), reasons.end());
  std::stable_sort(top.begin(), top.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < top.size() && i < 3; ++i)
    os << (i ? "\n  " : "\nmost frequent reasons:\n  ") << top[i].second << "x " << top[i].first;
  return os.str();
}

void SearchStats::count_refusal(const std::string& source, const std::string& message) {
  ++refused_by[source];
  ++reasons[message.substr(0, 120)];
}

} // namespace mt
