// Loading and running one graph of an artifact (see program.h).
#include "program.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kernel_library.h"
#include "packed_weights.h"
#include "thread_pool.h"
#include "weights_file.h"

namespace mt::rt {

using nlohmann::json;

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "bool") return 1;
  size_t digits = dtype.find_first_of("0123456789");
  if (digits == std::string::npos) return 0;
  int bits = std::atoi(dtype.c_str() + digits);
  return bits <= 8 ? 1 : static_cast<size_t>(bits / 8);
}

TensorInfo tensor_info(const json& j) {
  TensorInfo t;
  t.name = j.at("name").get<std::string>();
  t.dtype = j.at("dtype").get<std::string>();
  t.shape = j.at("shape").get<std::vector<int64_t>>();
  if (dtype_bytes(t.dtype) == 0) throw Error("unknown dtype '" + t.dtype + "'");
  return t;
}

json read_json(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": missing or unreadable (" + what + ")");
  std::stringstream text;
  text << f.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

Program::Program(const json& g, const std::string& where, const ProgramContext& ctx)
    : where_(where) {
  for (const json& t : g.at("inputs"))
    inputs_.push_back(tensor_info(t));
  for (const json& t : g.at("outputs"))
    outputs_.push_back(tensor_info(t));
  arena_bytes_ = g.at("arena_bytes").get<size_t>();
  const auto alignment = g.value("arena_alignment", size_t{64});
  if (g.contains("positions_input") && !g.at("positions_input").is_null()) {
    positions_input_ = g.at("positions_input").get<size_t>();
    if (positions_input_ >= inputs_.size() || inputs_[positions_input_].dtype != "i32")
      throw Error(where_ + ": positions_input " + std::to_string(positions_input_) +
                  " is not an i32 input");
  }
  for (const json& grp : g.at("groups")) {
    calls_.push_back(call(grp, ctx));
    writes_.push_back(state_writes(grp.value("state_writes", json::array()),
                                   "group '" + calls_.back().group + "'"));
  }
  writes_.push_back(state_writes(g.value("state_writes_after", json::array()), "the graph"));
  // operator new[] aligns only to max_align_t: over-allocate and align as the plan assumes.
  arena_storage_ = std::make_unique<std::byte[]>(arena_bytes_ + alignment);
  auto base = reinterpret_cast<uintptr_t>(arena_storage_.get());
  arena_ = reinterpret_cast<std::byte*>((base + alignment - 1) / alignment * alignment);
}

Program::~Program() = default;

Program::Call Program::call(const json& g, const ProgramContext& ctx) const {
  Call c;
  c.group = g.at("name").get<std::string>();
  c.symbol = g.at("kernel").get<std::string>();
  std::string what = "group '" + c.group + "'";
  auto k = ctx.kernels.find(c.symbol);
  if (k == ctx.kernels.end())
    throw Error(where_ + ": " + what + " calls kernel '" + c.symbol +
                "', which the library descriptor does not list");
  c.fn = ctx.library->kernel(c.symbol, where_ + ": " + what);
  const json& params = k->second->at("params");
  const json& args = g.at("args");
  if (args.size() != params.size())
    throw Error(where_ + ": " + what + " passes " + std::to_string(args.size()) +
                " arguments to '" + c.symbol + "', which takes " + std::to_string(params.size()));
  for (size_t i = 0; i < args.size(); ++i)
    c.args.push_back(arg(args[i], params[i], what + " argument " + std::to_string(i), ctx));
  if (k->second->contains("packed") && ctx.packed && ctx.pool)
    use_packed_variant(c, *k->second, ctx);
  return c;
}

void Program::use_packed_variant(Call& c, const json& kernel, const ProgramContext& ctx) const {
  const json& packed = kernel.at("packed");
  const json& entries = packed.at("params");
  for (const json& e : entries) {
    const size_t i = e.at("param").get<size_t>();
    if (i >= c.args.size() || c.args[i].kind != Arg::Param) return; // an input here: unpacked
  }
  const std::string what = where_ + ": group '" + c.group + "'";
  const std::string symbol = packed.at("symbol").get<std::string>();
  auto variant = ctx.kernels.find(symbol);
  if (variant == ctx.kernels.end() ||
      variant->second->at("params").size() != kernel.at("params").size())
    throw Error(what + ": the packed variant '" + symbol + "' of '" + c.symbol +
                "' is not a kernel of the library with the same params");
  const json& params = kernel.at("params");
  for (const json& e : entries) {
    const size_t i = e.at("param").get<size_t>();
    if (variant->second->at("params")[i].at("bytes").get<size_t>() != e.at("bytes").get<size_t>())
      throw Error(what + ": the packed variant '" + symbol + "' takes param " + std::to_string(i) +
                  " in other bytes than its packed entry says");
    c.args[i].param = ctx.packed->get(c.args[i].param, params[i].at("bytes").get<size_t>(), e,
                                      *ctx.library, *ctx.pool, what);
  }
  c.fn = ctx.library->kernel(symbol, what);
  c.symbol = symbol;
}

Program::Arg Program::arg(const json& a, const json& param, const std::string& what,
                          const ProgramContext& ctx) const {
  size_t want = param.at("bytes").get<size_t>();
  size_t bytes = a.at("bytes").get<size_t>();
  auto mismatch = [&](size_t have) {
    return Error(where_ + ": " + what + " ('" + param.value("name", "") + "') has " +
                 std::to_string(have) + " bytes, the kernel's parameter " + std::to_string(want));
  };
  if (bytes != want) throw mismatch(bytes);
  Arg r;
  if (a.contains("input") || a.contains("output")) {
    bool in = a.contains("input");
    r.kind = in ? Arg::Input : Arg::Output;
    r.index = a.at(in ? "input" : "output").get<size_t>();
    const auto& list = in ? inputs_ : outputs_;
    if (r.index >= list.size())
      throw Error(where_ + ": " + what + " names " + (in ? "input " : "output ") +
                  std::to_string(r.index) + " of " + std::to_string(list.size()));
    if (list[r.index].bytes() != want) throw mismatch(list[r.index].bytes());
  } else if (a.contains("param")) {
    r.kind = Arg::Param;
    const WeightView& w =
        ctx.weights->tensor(a.at("param").get<std::string>(), where_ + ": " + what);
    if (w.bytes != want) throw mismatch(w.bytes);
    r.param = w.data;
  } else if (a.contains("arena")) {
    r.kind = Arg::Arena;
    r.offset = a.at("arena").get<size_t>();
    if (r.offset + bytes > arena_bytes_)
      throw Error(where_ + ": " + what + " lies past the end of the arena (" +
                  std::to_string(arena_bytes_) + " bytes)");
  } else {
    throw Error(where_ + ": " + what + " is none of input, output, param, arena: " + a.dump());
  }
  return r;
}

std::vector<Program::StateWrite> Program::state_writes(const json& list,
                                                       const std::string& what) const {
  std::vector<StateWrite> out;
  for (const json& w : list) {
    StateWrite s{w.at("rows").get<size_t>(), w.at("cache").get<size_t>()};
    // rows [B, S, W] into cache [B, C, W] of the same dtype, at positions [B, S].
    const bool ok = positions_input_ != SIZE_MAX && s.rows < outputs_.size() &&
                    s.cache < inputs_.size() && outputs_[s.rows].shape.size() == 3 &&
                    inputs_[s.cache].shape.size() == 3 &&
                    outputs_[s.rows].dtype == inputs_[s.cache].dtype &&
                    outputs_[s.rows].shape[0] == inputs_[s.cache].shape[0] &&
                    outputs_[s.rows].shape[2] == inputs_[s.cache].shape[2] &&
                    inputs_[positions_input_].num_elements() ==
                        outputs_[s.rows].shape[0] * outputs_[s.rows].shape[1];
    if (!ok)
      throw Error(where_ + ": " + what + " writes output " + std::to_string(s.rows) +
                  " into input " + std::to_string(s.cache) +
                  ", which are not a state's rows [B, S, W] and its cache [B, C, W] beside "
                  "positions [B, S]");
    out.push_back(s);
  }
  return out;
}

void Program::write_states(const std::vector<StateWrite>& writes,
                           const std::vector<const void*>& inputs,
                           const std::vector<void*>& outputs) const {
  for (const StateWrite& w : writes) {
    const TensorInfo& rows = outputs_[w.rows];
    const int64_t B = rows.shape[0], S = rows.shape[1], C = inputs_[w.cache].shape[1];
    const size_t row = static_cast<size_t>(rows.shape[2]) * dtype_bytes(rows.dtype);
    const auto* pos = static_cast<const int32_t*>(inputs[positions_input_]);
    // The cache is the caller's buffer, written in place: that is what the step is for.
    auto* cache = static_cast<std::byte*>(const_cast<void*>(inputs[w.cache]));
    const auto* src = static_cast<const std::byte*>(outputs[w.rows]);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < S; ++j) {
        const int64_t p = pos[b * S + j];
        if (p < 0 || p >= C) continue; // beyond the cache: no kernel can read it
        std::memcpy(cache + static_cast<size_t>(b * C + p) * row,
                    src + static_cast<size_t>(b * S + j) * row, row);
      }
  }
}

void Program::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                  const ThreadPool& pool) {
  std::vector<void*> ptrs;
  for (size_t i = 0; i < calls_.size(); ++i) {
    write_states(writes_[i], inputs, outputs);
    const Call& c = calls_[i];
    ptrs.clear();
    for (const Arg& a : c.args) {
      switch (a.kind) {
      case Arg::Input:
        ptrs.push_back(const_cast<void*>(inputs[a.index]));
        break;
      case Arg::Output:
        ptrs.push_back(outputs[a.index]);
        break;
      case Arg::Param:
        ptrs.push_back(const_cast<void*>(a.param));
        break;
      case Arg::Arena:
        ptrs.push_back(arena_ + a.offset);
        break;
      }
    }
    int32_t rc = c.fn(ptrs.data(), pool.runtime());
    if (rc != MT_LLVM_OK)
      throw Error("kernel '" + c.symbol + "' (group '" + c.group + "') failed with code " +
                  std::to_string(rc) + (rc == MT_LLVM_ERR_ALLOC ? " (out of memory)" : ""));
  }
  write_states(writes_.back(), inputs, outputs);
}

} // namespace mt::rt
