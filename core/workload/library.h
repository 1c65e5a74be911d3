// The workload library: named tensor programs (matmul, conv2d, softmax, ...) with typed,
// documented parameters, created from a spec string such as "matmul(M=1024,N=1024,K=1024)".
// Specs are the user-facing names of tuning tasks (CLI, database keys, tests).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/function.h"

namespace mt {

enum class ParamKind : uint8_t { Int, String };

struct ParamInfo {
  std::string name;
  ParamKind kind = ParamKind::Int;
  std::string default_value; // as written in a spec
  std::string doc;           // one line
  // Int: inclusive range. String: the allowed values (empty = any identifier).
  int64_t min = 0;
  int64_t max = INT64_MAX;
  std::vector<std::string> choices;
  // False for a parameter added after specs were in use (databases key tasks by the
  // canonical spec): at its default value it is left out of the canonical spec, so the old
  // spelling and its records stay valid.
  bool written_at_default = true;
};

struct WorkloadInfo {
  std::string name;
  std::string doc; // one line; names the inputs and outputs in parameter order
  std::vector<ParamInfo> params;
};

using ParamValue = std::variant<int64_t, std::string>;

// Resolved parameters of one workload: every declared parameter has a value.
class WorkloadParams {
public:
  WorkloadParams(std::string workload, std::map<std::string, ParamValue> values)
      : workload_(std::move(workload)), values_(std::move(values)) {}
  const std::string& workload() const { return workload_; }
  int64_t get_int(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  bool get_bool(const std::string& name) const { return get_int(name) != 0; }
  // The "dtype" parameter, parsed.
  DType dtype() const;
  const std::map<std::string, ParamValue>& values() const { return values_; }

private:
  std::string workload_;
  std::map<std::string, ParamValue> values_;
};

// A spec split into its name and `key=value` arguments (syntax only, nothing validated).
struct WorkloadSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args; // in spec order
};
// Grammar: name [ "(" [ key "=" value { "," key "=" value } ] ")" ], whitespace allowed
// between tokens; names are identifiers, values are integers or identifiers. Throws
// std::invalid_argument naming the 1-based column of a syntax error.
WorkloadSpec parse_workload_spec(std::string_view spec);

// Validates a spec against the registry and fills in defaults. Throws std::invalid_argument
// for unknown workloads/parameters (with a "did you mean"), duplicates and bad values.
WorkloadParams resolve_workload_spec(std::string_view spec);
// The spec with every parameter written out in declaration order: a stable task key.
std::string canonical_workload_spec(std::string_view spec);
// Builds the tensor program of a spec; the Function's name is the workload name.
Function make_workload(std::string_view spec);

std::vector<WorkloadInfo> list_workloads();
const WorkloadInfo& workload_info(const std::string& name); // throws like make_workload
// One or more small-shape specs per workload (each a few hundred thousand multiply-adds at
// most) for randomized and numerical tests.
std::vector<std::string> test_workload_specs();
// Markdown reference of every workload and parameter (the body of docs/workloads.md).
std::string workloads_markdown();

} // namespace mt
