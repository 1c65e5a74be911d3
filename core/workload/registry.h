// Private to core/workload: how a workload family registers its workloads with the library,
// and small helpers shared by the family files (parameter declarations, error messages).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/support/did_you_mean.h"
#include "core/workload/library.h"

namespace mt::workload_detail {

struct WorkloadDef {
  WorkloadInfo info;
  std::function<Function(const WorkloadParams&)> build;
  std::vector<std::string> test_specs;
};

ParamInfo int_param(std::string name, int64_t def, std::string doc, int64_t min = 1,
                    int64_t max = INT64_MAX);
ParamInfo string_param(std::string name, std::string def, std::string doc,
                       std::vector<std::string> choices = {});
ParamInfo bool_param(std::string name, bool def, std::string doc);
// "dtype": a floating-point element type, f32 by default.
ParamInfo dtype_param();
// "out_dtype": "same" (the result in dtype, the default) or "f32" (mixed precision: f16/bf16
// inputs, products summed in f32). Left out of canonical specs at its default.
ParamInfo out_dtype_param();
DType out_dtype(const WorkloadParams& p);

using mt::did_you_mean; // core/support/did_you_mean.h
// Throws std::invalid_argument("workload 'w': msg").
[[noreturn]] void workload_error(const WorkloadParams& p, const std::string& msg);

// One function per family file.
void add_gemm_workloads(std::vector<WorkloadDef>* defs);        // gemm.cpp
void add_conv_workloads(std::vector<WorkloadDef>* defs);        // conv.cpp
void add_norm_workloads(std::vector<WorkloadDef>* defs);        // norm.cpp
void add_pool_workloads(std::vector<WorkloadDef>* defs);        // pool.cpp
void add_elementwise_workloads(std::vector<WorkloadDef>* defs); // elementwise.cpp

} // namespace mt::workload_detail
