// The suggestion an error message about an unknown name ends with: the closest known name
// within a small edit distance (case ignored, adjacent transpositions counted as one edit).
#pragma once

#include <string>
#include <vector>

namespace mt {

// " (did you mean 'x'?)" for the closest candidate within a small edit distance, or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

} // namespace mt
