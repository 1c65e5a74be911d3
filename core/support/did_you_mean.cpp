// "Did you mean" for a misspelt name (see did_you_mean.h).
#include "core/support/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace mt {

namespace {

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, the most
// common typo ("reul" for "relu").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_d = 0;
  for (const std::string& c : candidates) {
    // Case-only differences count as the closest possible match.
    size_t d = lower(c) == lower(word) ? 0 : edit_distance(lower(word), lower(c)) + 1;
    if (!best || d < best_d) {
      best = &c;
      best_d = d;
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3) + 1;
  if (!best || best_d > limit) return "";
  return " (did you mean '" + *best + "'?)";
}

} // namespace mt
