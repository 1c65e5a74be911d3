// Target resolution and default component sets (see target_setup.h).
#include "core/tuner/target_setup.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <variant>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/plugin/plugin_host.h"

namespace mt {

bool rounds_products_to_bf16(const TargetSetup& t) {
  auto it = t.attrs.find("fpmath");
  if (it == t.attrs.end()) return false;
  const std::string* v = std::get_if<std::string>(&it->second);
  return v && *v == "bf16";
}

TargetWords split_target(const std::string& target) {
  TargetWords t;
  std::istringstream is(target);
  is >> t.word;
  // The component gets the options after the first word as a target string of its own kind
  // ("llvm -mcpu=x" for both "llvm -mcpu=x" and "llvm.cpu -mcpu=x").
  std::string options = target.substr(target.find(t.word) + t.word.size());
  if (!t.word.empty() && options.find_first_not_of(" \t") != std::string::npos) {
    nlohmann::json j;
    j["target"] = t.word.substr(0, t.word.find('.')) + options;
    t.config = j.dump();
  }
  return t;
}

namespace {

// MetaSchedule's defaults for the kinds of device the standard plugin serves; used when a
// target does not name its own components.
struct StandardSet {
  std::vector<std::string> rules, postprocs;
  std::vector<std::pair<std::string, double>> mutators;
};

StandardSet standard_set(const std::string& kind) {
  if (is_gpu_kind(kind))
    return {{"std.AutoInline", "std.MultiLevelTilingTensorCore", "std.MultiLevelTiling",
             "std.CrossThreadReduction", "std.ParallelVectorizeUnroll", "std.AutoBind"},
            {"std.DisallowDynamicLoop", "std.RewriteCooperativeFetch",
             "std.RewriteSoftwarePipeline", "std.RewriteUnboundBlock",
             "std.RewriteParallelVectorizeUnroll", "std.RewriteReductionBlock",
             "std.VerifyGPUCode"},
            {{"std.MutateTileSize", 0.9},
             {"std.MutateUnroll", 0.08},
             {"std.MutateThreadBinding", 0.02},
             {"std.MutatePipelineStages", 0.02}}};
  return {{"std.AutoInline", "std.VectorRFactor", "std.AddRFactor", "std.MultiLevelTiling",
           "std.ParallelVectorizeUnroll", "std.RandomComputeLocation"},
          {"std.DisallowDynamicLoop", "std.RewriteParallelVectorizeUnroll",
           "std.RewriteReductionBlock"},
          {{"std.MutateTileSize", 0.9},
           {"std.MutateComputeLocation", 0.05},
           {"std.MutateUnroll", 0.03},
           {"std.MutateParallel", 0.02}}};
}

// Mutator probabilities of the standard set, for targets that list their own mutators.
double standard_probability(const std::string& name) {
  for (const char* kind : {"llvm", "cuda"})
    for (const auto& [n, p] : standard_set(kind).mutators)
      if (n == name) return p;
  return 0;
}

TuneAttributes attributes_of(const nlohmann::json& j) {
  TuneAttributes a;
  if (!j.is_object()) return a;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number_integer() || v.is_number_unsigned())
      a[k] = v.get<int64_t>();
    else if (v.is_boolean())
      a[k] = int64_t{v.get<bool>() ? 1 : 0};
    else if (v.is_number_float())
      a[k] = static_cast<int64_t>(v.get<double>());
    else if (v.is_string())
      a[k] = v.get<std::string>();
    else if (v.is_array()) {
      // Lists (e.g. CPU features) as one comma-separated string.
      std::string s;
      for (const auto& e : v)
        s += (s.empty() ? "" : ",") + (e.is_string() ? e.get<std::string>() : e.dump());
      a[k] = s;
    }
  }
  return a;
}

// Keeps the registered names of `want`, warning about the others.
std::vector<std::string> available(const PluginHost& host, ComponentKind kind,
                                   const std::vector<std::string>& want) {
  std::vector<std::string> out;
  for (const auto& n : want) {
    if (host.find(kind, n))
      out.push_back(n);
    else
      spdlog::warn("{} '{}' is not registered by any loaded plugin; tuning without it",
                   to_string(kind), n);
  }
  return out;
}

} // namespace

bool target_matches(const std::string& record_target, const std::string& wanted) {
  if (wanted.empty() || record_target == wanted) return true;
  if (record_target.size() <= wanted.size() || record_target.compare(0, wanted.size(), wanted) != 0)
    return false;
  char next = record_target[wanted.size()];
  // "llvm" matches "llvm -mcpu=..."; a component prefix matches its component, as in
  // setup_target ("onednn" matches "onednn.cpu"), but only within the first word.
  return next == ' ' || (next == '.' && wanted.find(' ') == std::string::npos);
}

std::string short_target_name(const std::string& target) {
  std::istringstream is(target);
  std::string w, out;
  while (is >> w)
    if (w.rfind("-mattr=", 0) != 0) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string device_kind(const std::string& device_json) {
  try {
    nlohmann::json j = nlohmann::json::parse(device_json);
    return j.is_object() ? j.value("kind", std::string()) : std::string();
  } catch (const std::exception&) {
    return {};
  }
}

bool is_gpu_kind(const std::string& kind) {
  static const std::vector<std::string> gpu_kinds = {"cuda",   "rocm",  "hip",    "gpu",
                                                     "vulkan", "metal", "opencl", "webgpu"};
  return std::find(gpu_kinds.begin(), gpu_kinds.end(), kind) != gpu_kinds.end();
}

TargetSetup setup_target(const PluginHost& host, const std::string& target, bool need_device) {
  const TargetWords words = split_target(target);
  const std::string& word = words.word;
  if (word.empty()) throw std::invalid_argument("empty target string");
  std::vector<ComponentInfo> targets = host.components(ComponentKind::Target);
  const ComponentInfo* chosen = nullptr;
  for (const auto& c : targets)
    if (c.name == word) chosen = &c;
  if (!chosen)
    for (const auto& c : targets)
      if (c.name.rfind(word + ".", 0) == 0) {
        chosen = &c;
        break;
      }
  if (!chosen) {
    std::string names;
    for (const auto& c : targets)
      names += (names.empty() ? "" : ", ") + c.name;
    throw std::invalid_argument("target '" + target + "': no target component '" + word + "' or '" +
                                word + ".*' is registered (targets: " +
                                (names.empty() ? "none; is the plugin path right?" : names) + ")");
  }
  TargetSetup s;
  s.component = chosen->name;
  s.target = host.create_target(s.component, words.config);
  s.device_json = s.target->describe_device();
  nlohmann::json dev;
  try {
    dev = nlohmann::json::parse(s.device_json);
  } catch (const std::exception& e) {
    throw std::runtime_error("target '" + s.component +
                             "': describe_device() is not JSON: " + e.what());
  }
  // A target whose device is missing (no CUDA driver, no OpenCL platform) says why.
  if (dev.contains("unavailable") && dev["unavailable"].is_string()) {
    if (need_device)
      throw std::runtime_error("target '" + s.component +
                               "': " + dev["unavailable"].get<std::string>());
    s.unavailable = dev["unavailable"].get<std::string>();
  }
  s.attrs = attributes_of(dev);
  std::string kind = dev.value("kind", word.substr(0, word.find('.')));
  s.target_string = dev.contains("target") && dev["target"].is_string()
                        ? dev["target"].get<std::string>()
                        : target;
  if (s.target_string.empty()) s.target_string = target;

  StandardSet std_set = standard_set(kind);
  auto own = [&](ComponentKind k) { return s.target->default_components(k); };
  std::vector<std::string> rules = own(ComponentKind::ScheduleRule);
  std::vector<std::string> postprocs = own(ComponentKind::Postproc);
  std::vector<std::string> mutators = own(ComponentKind::Mutator);
  if (rules.empty()) rules = std_set.rules;
  if (postprocs.empty()) postprocs = std_set.postprocs;
  std::vector<double> probs;
  if (mutators.empty()) {
    for (const auto& [n, p] : std_set.mutators) {
      mutators.push_back(n);
      probs.push_back(p);
    }
  } else {
    // The ABI's default_components carries no weights; a target may give them in its
    // device description instead.
    nlohmann::json given = dev.value("mutator_probabilities", nlohmann::json::object());
    for (const auto& n : mutators) {
      double p = given.is_object() && given.contains(n) && given[n].is_number()
                     ? given[n].get<double>()
                     : standard_probability(n);
      probs.push_back(p > 0 ? p : 1.0 / static_cast<double>(mutators.size()));
    }
  }
  s.rules = available(host, ComponentKind::ScheduleRule, rules);
  s.postprocs = available(host, ComponentKind::Postproc, postprocs);
  for (size_t i = 0; i < mutators.size(); ++i)
    if (host.find(ComponentKind::Mutator, mutators[i])) {
      s.mutators.push_back(mutators[i]);
      s.mutator_probs.push_back(probs[i]);
    } else {
      spdlog::warn("mutator '{}' is not registered by any loaded plugin; tuning without it",
                   mutators[i]);
    }
  return s;
}

} // namespace mt
