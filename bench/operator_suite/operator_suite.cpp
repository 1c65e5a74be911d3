// bench_operator_suite: the MetaSchedule/Ansor operator suite (REFERENCE.md section 4) at
// ResNet-50 and BERT-base layer shapes, measured side by side in one run:
//   untuned  the unscheduled function built by the LLVM CPU target (llvm.cpu)
//   tuned    the fastest record of a tuning database (--db), replayed and built by llvm.cpu
//            (--tune N first tunes every operator to N records with the tuner API)
//   oneDNN   the onednn.cpu target (oneDNN's primitive), "-" where it offers nothing
// and the ratio tuned/oneDNN in GFLOPS. Every speed is measured here, in this process (stored
// record times are not reused); tuned and oneDNN outputs are checked against the untuned one.
// With a database, also how soon tuning reached 0.8 and 0.9 of oneDNN (trials and minutes,
// from the records the tuner committed: its trials against its oneDNN record).
// Writes operator_suite.csv, operator_suite.svg and operator_suite.md into --out.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/database/database.h"
#include "core/ir/function.h"
#include "core/measure/implementation_compare.h"
#include "core/plugin/plugin_error.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tuner.h"
#include "core/workload/flop_count.h"
#include "core/workload/library.h"
#include "svg_chart.h"

namespace {

using namespace mt;

struct SuiteOp {
  const char* label; // the suite's abbreviation and the layer
  const char* spec;
};

// ResNet-50 (and ResNeXt / MobileNet-style variants at ResNet shapes) and BERT-base layers, and
// two linears of one decoded token (bench/llama's model: SwiGLU's gate, the vocabulary head).
const SuiteOp kSuite[] = {
    {"C2D resnet 3x3", "conv2d(N=1,C=64,H=56,W=56,F=64,KH=3,KW=3,stride=1,padding=1)"},
    {"C2D resnet 1x1", "conv2d(N=1,C=256,H=56,W=56,F=64,KH=1,KW=1,stride=1,padding=0)"},
    {"CBR resnet stem",
     "conv2d(N=1,C=3,H=224,W=224,F=64,KH=7,KW=7,stride=2,padding=3,bias=1,relu=1)"},
    {"DEP 3x3", "depthwise_conv2d(N=1,C=128,H=56,W=56,KH=3,KW=3,stride=1,padding=1)"},
    {"GRP resnext 3x3", "conv2d(N=1,C=128,H=56,W=56,F=128,KH=3,KW=3,stride=1,padding=1,groups=32)"},
    {"DIL resnet 3x3 d2",
     "conv2d(N=1,C=256,H=14,W=14,F=256,KH=3,KW=3,stride=1,padding=2,dilation=2)"},
    {"C1D", "conv1d(N=1,C=64,L=256,F=128,K=3,stride=2,padding=1)"},
    {"C3D", "conv3d(N=1,C=64,D=8,H=14,W=14,F=64,KD=3,KH=3,KW=3,stride=1,padding=1)"},
    {"T2D", "conv2d_transpose(N=1,C=512,H=4,W=4,F=256,KH=4,KW=4,stride=2,padding=1)"},
    {"CAP", "capsule_conv2d(N=1,H=16,W=16,C=32,F=32,K=3,stride=2,padding=1,cap=4)"},
    {"POOL resnet max", "pool2d(N=1,C=64,H=112,W=112,K=3,stride=2,padding=1,kind=max)"},
    {"GMM bert ffn", "matmul(M=128,N=3072,K=768)"},
    {"dense bert +bias+gelu", "dense(M=128,N=3072,K=768,bias=1,act=gelu)"},
    {"BMM bert scores", "batch_matmul(B=12,M=128,N=128,K=64)"},
    {"TBG bert", "transpose_batch_matmul(B=1,S=128,H=12,D=64)"},
    {"SFM bert", "softmax(M=1536,N=128)"},
    {"NRM layernorm bert", "layernorm(M=128,N=768)"},
    {"NRM l2", "norm(B=1,M=256,N=256)"},
    {"GMV llama gate", "dense(M=1,N=2048,K=768,bias=0,act=none)"},
    {"GMV llama lm head", "dense(M=1,N=32000,K=768,bias=0,act=none)"},
};

struct Options {
  std::string db, out = "bench/results", target = "llvm", only;
  size_t tune = 0;
  size_t batch_size = 0; // the tuner's (0 = auto_batch_size)
  int repeats = 3;
  int side_by_side = 5; // alternating rounds of tuned vs oneDNN; 0 = in-process timings only
  double min_repeat = 0.2;
  std::string command;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr
      << "bench_operator_suite: " << why << "\n"
      << "usage: bench_operator_suite [--db FILE] [--tune N] [--batch-size B] [--out DIR]\n"
      << "         [--target T] [--repeats R] [--min-repeat SECONDS] [--side-by-side ROUNDS]\n"
      << "         [--only LABEL,...]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i)
    o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--db")
      o.db = value();
    else if (a == "--tune")
      o.tune = std::stoul(value());
    else if (a == "--batch-size")
      o.batch_size = std::stoul(value());
    else if (a == "--out")
      o.out = value();
    else if (a == "--target")
      o.target = value();
    else if (a == "--repeats")
      o.repeats = std::stoi(value());
    else if (a == "--min-repeat")
      o.min_repeat = std::stod(value());
    else if (a == "--side-by-side")
      o.side_by_side = std::stoi(value());
    else if (a == "--only")
      o.only = value();
    else if (a == "-h" || a == "--help")
      usage("help");
    else
      usage("unknown argument '" + a + "'");
  }
  return o;
}

bool selected(const Options& o, const SuiteOp& op) {
  if (o.only.empty()) return true;
  std::stringstream ss(o.only);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && std::string(op.label).find(item) != std::string::npos) return true;
  return false;
}

// How soon tuning got there: trials of the tuning target (in commit order) and minutes from
// the task's first record (its oneDNN measurement, right after the reference) until the
// running best reached a fraction of oneDNN's speed; -1 / NaN when it never did.
struct Reach {
  long trials = -1;
  double minutes = NAN;
};

struct Row {
  std::string label, spec;
  double gflop = 0;
  double untuned = NAN, tuned = NAN, onednn = NAN; // seconds per call
  std::string tuned_note, onednn_note, impl;
  Reach to_08, to_09;
  bool side_by_side = false; // tuned and oneDNN from alternating rounds in fresh workers
  long records = 0;          // of the tuning target
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

std::vector<NDArray*> ptrs(std::vector<NDArray>& a) {
  std::vector<NDArray*> p;
  for (auto& x : a)
    p.push_back(&x);
  return p;
}

// Times `module` on `args`; the output param is left holding the result of a run.
double time_module(const PluginModule& m, std::vector<NDArray>& args, const Options& o) {
  m.run(ptrs(args)); // warm-up
  return median(m.time(ptrs(args), o.repeats, o.min_repeat));
}

std::string json_field(const std::string& json, const std::string& key) {
  std::string k = "\"" + key + "\": \"";
  size_t b = json.find(k);
  if (b == std::string::npos) return "";
  b += k.size();
  size_t e = json.find('"', b);
  return json.substr(b, e - b);
}

std::optional<TuningRecord> best_record(const Database& db, const Function& f,
                                        const std::string& target) {
  auto entry = db.find_workload(f);
  if (!entry) return std::nullopt;
  std::optional<TuningRecord> best;
  for (TuningRecord& r : db.records(entry->id)) {
    if (r.failed() || !target_matches(r.target, target)) continue;
    if (!best || r.mean_secs() < best->mean_secs()) best = std::move(r);
  }
  return best;
}

// From the database alone: the tuning target's records against the oneDNN record, both
// measured by the tuner (in the same run when the task was tuned once).
void fill_reach(const Database& db, const Function& f, const std::string& target, Row& row) {
  auto entry = db.find_workload(f);
  if (!entry) return;
  std::vector<TuningRecord> all = db.records(entry->id);
  if (all.empty()) return;
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  double lib = INFINITY;
  for (const TuningRecord& r : all)
    if (!r.failed() && target_matches(r.target, "onednn")) lib = std::min(lib, r.mean_secs());
  const int64_t start_ms = all.front().created_at_ms;
  double best = INFINITY;
  for (const TuningRecord& r : all) {
    if (!target_matches(r.target, target)) continue;
    ++row.records;
    if (!r.failed()) best = std::min(best, r.mean_secs());
    for (auto [reach, fraction] : {std::pair{&row.to_08, 0.8}, std::pair{&row.to_09, 0.9}})
      if (reach->trials < 0 && std::isfinite(lib) && lib / best >= fraction) {
        reach->trials = row.records;
        reach->minutes = static_cast<double>(r.created_at_ms - start_ms) / 60000.0;
      }
  }
}

std::string fmt(double v, const char* f = "%.2f") {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "trials,minutes", empty fields when never reached.
std::string reach_csv(const Reach& r) {
  if (r.trials < 0) return ",";
  return std::to_string(r.trials) + "," + fmt(r.minutes, "%.2f");
}

double gflops(const Row& r, double secs) {
  return std::isfinite(secs) && secs > 0 ? r.gflop / secs : NAN;
}

} // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::filesystem::create_directories(o.out);
  // Never unloaded: a plugin's worker threads (OpenMP pools of oneDNN or of a cost model
  // loaded by the tuner) may outlive main(), and unloading their code under them crashes the
  // exit.
  PluginHost& host = *new PluginHost();
  host.discover();
  TargetSetup llvm = setup_target(host, o.target);
  std::unique_ptr<PluginTarget> onednn;
  if (host.find(ComponentKind::Target, "onednn.cpu"))
    onednn = host.create_target("onednn.cpu", R"({"log": false})");
  else
    std::cerr << "note: onednn.cpu not found (plugin not built?): the oneDNN column is empty\n";

  std::vector<SuiteOp> ops;
  for (const SuiteOp& op : kSuite)
    if (selected(o, op)) ops.push_back(op);
  if (ops.empty()) usage("--only matched no operator");

  if (o.tune > 0) {
    if (o.db.empty()) o.db = (std::filesystem::path(o.out) / "operator_suite.db").string();
    // One run per operator: the minutes to 0.8 / 0.9 of oneDNN (fill_reach) are then that
    // operator's own tuning time, not shared with the others of a joint run.
    std::cerr << "tuning " << ops.size() << " operators to " << o.tune << " records each into "
              << o.db << " ...\n";
    for (const SuiteOp& op : ops) {
      TuneOptions topt;
      topt.target = o.target;
      topt.db_path = o.db;
      topt.trials = o.tune;
      topt.batch_size = o.batch_size;
      try {
        tune(host, {{op.spec, Function(), 1.0}}, topt);
      } catch (const std::exception& e) {
        std::cerr << "warning: tuning " << op.label << " stopped: " << e.what() << "\n";
      }
    }
  }
  std::unique_ptr<Database> db;
  if (!o.db.empty()) db = Database::open(o.db);

  // Tuned against oneDNN side by side first: alternating rounds, each timing in a fresh worker
  // (compare_interleaved). Before anything below runs oneDNN in this process: its OpenMP is not
  // fork-safe once it has run here.
  std::vector<CompareResult> side(ops.size());
  if (db && onednn && o.side_by_side > 0)
    for (size_t i = 0; i < ops.size(); ++i) {
      Function f = make_workload(ops[i].spec);
      try {
        if (auto rec = best_record(*db, f, o.target)) {
          CompareOptions co;
          co.repeats = o.side_by_side;
          co.min_repeat_seconds = o.min_repeat;
          side[i] = compare_interleaved(*llvm.target, replay(*rec, f), *onednn, f, co);
        }
      } catch (const std::exception& e) {
        side[i].error = e.what();
      }
      if (!side[i].ok && !side[i].error.empty())
        std::cerr << ops[i].label << ": side by side: " << side[i].error << "\n";
    }

  std::vector<Row> rows;
  for (size_t op_index = 0; op_index < ops.size(); ++op_index) {
    const SuiteOp& op = ops[op_index];
    Row r;
    r.label = op.label;
    r.spec = op.spec;
    Function f = make_workload(op.spec);
    r.gflop = count_flops(f) * 1e-9;
    std::vector<bool> outs = f.output_mask();
    const size_t out =
        static_cast<size_t>(std::find(outs.begin(), outs.end(), true) - outs.begin());
    std::vector<NDArray> args;
    for (size_t i = 0; i < f.params.size(); ++i) {
      args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
      if (!outs[i]) args.back().fill_random(17 + i);
    }
    std::cerr << op.label << ": " << op.spec << "\n";
    NDArray expected;
    try {
      auto m = llvm.target->build(f);
      r.untuned = time_module(*m, args, o);
      expected = args[out];
    } catch (const std::exception& e) {
      std::cerr << "  untuned failed: " << e.what() << "\n";
    }
    auto check = [&](std::string* note) {
      std::string why;
      if (!expected.empty() && !allclose(args[out], expected, 1e-3, 1e-3, &why)) {
        *note = "MISMATCH";
        std::cerr << "  output mismatch: " << why << "\n";
      }
    };
    if (db) {
      try {
        fill_reach(*db, f, o.target, r);
        if (auto rec = best_record(*db, f, o.target)) {
          Function g = replay(*rec, f);
          auto m = llvm.target->build(g);
          args[out].fill(0);
          r.tuned = time_module(*m, args, o);
          r.tuned_note = "record " + std::to_string(rec->id);
          check(&r.tuned_note);
        } else {
          r.tuned_note = "no record";
        }
      } catch (const std::exception& e) {
        r.tuned_note = "failed";
        std::cerr << "  tuned failed: " << e.what() << "\n";
      }
    } else {
      r.tuned_note = "no --db";
    }
    if (onednn) {
      try {
        auto m = onednn->build(f);
        r.impl = json_field(onednn->describe_device(), "implementation");
        args[out].fill(0);
        r.onednn = time_module(*m, args, o);
        check(&r.onednn_note);
      } catch (const PluginError& e) {
        r.onednn_note = e.status() == MT_ERROR_UNSUPPORTED ? "not offered" : "failed";
        if (e.status() != MT_ERROR_UNSUPPORTED)
          std::cerr << "  oneDNN failed: " << e.what() << "\n";
      }
    }
    // The figures of the side-by-side rounds replace the in-process ones (kept as the check).
    if (const CompareResult& c = side[op_index]; c.ok && std::isfinite(r.onednn)) {
      r.tuned = c.a_median;
      r.onednn = c.b_median;
      r.side_by_side = true;
    }
    std::cerr << "  untuned " << fmt(gflops(r, r.untuned)) << " / tuned " << fmt(gflops(r, r.tuned))
              << " / oneDNN " << fmt(gflops(r, r.onednn)) << " GFLOPS\n";
    rows.push_back(r);
  }

  // CSV
  const std::filesystem::path dir(o.out);
  {
    std::ofstream csv(dir / "operator_suite.csv");
    csv << "operator,workload,gflop,untuned_ms,untuned_gflops,tuned_ms,tuned_gflops,onednn_ms,"
           "onednn_gflops,tuned_over_onednn,tuned_note,onednn_note,onednn_impl,records,"
           "trials_to_0.8,minutes_to_0.8,trials_to_0.9,minutes_to_0.9,side_by_side\n";
    for (const Row& r : rows) {
      auto ms = [](double s) { return std::isfinite(s) ? fmt(s * 1e3, "%.4f") : ""; };
      auto g = [&](double s) {
        return std::isfinite(gflops(r, s)) ? fmt(gflops(r, s), "%.3f") : "";
      };
      double ratio = gflops(r, r.tuned) / gflops(r, r.onednn);
      csv << '"' << r.label << "\",\"" << r.spec << "\"," << fmt(r.gflop, "%.6f") << ','
          << ms(r.untuned) << ',' << g(r.untuned) << ',' << ms(r.tuned) << ',' << g(r.tuned) << ','
          << ms(r.onednn) << ',' << g(r.onednn) << ','
          << (std::isfinite(ratio) ? fmt(ratio, "%.4f") : "") << ',' << r.tuned_note << ','
          << r.onednn_note << ",\"" << r.impl << "\"," << r.records << ',' << reach_csv(r.to_08)
          << ',' << reach_csv(r.to_09) << "," << (r.side_by_side ? 1 : 0) << "\n";
    }
  }
  // Markdown
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::ostringstream md;
  md << "Operator suite, " << date << ", " << std::thread::hardware_concurrency()
     << " hardware threads, command: `" << o.command << "`"
     << (o.db.empty() ? "" : ", database `" + o.db + "`") << ". Tuned and oneDNN: "
     << (o.side_by_side > 0 ? std::to_string(o.side_by_side) +
                                  " alternating rounds each, every timing in a fresh worker "
                                  "(where both exist; marked *), "
                            : std::string())
     << "else timed in this process (median of " << o.repeats << ")\n\n";
  md << "| operator | workload | GFLOP | untuned GFLOPS | tuned GFLOPS | oneDNN GFLOPS | "
        "tuned/oneDNN | to 0.8 (trials, min) | to 0.9 | oneDNN impl |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  auto reach_md = [](const Reach& r) {
    return r.trials < 0 ? std::string("-")
                        : std::to_string(r.trials) + ", " + fmt(r.minutes, "%.1f");
  };
  // Kept for the two figures the suite is judged by, so that no one computes them by hand.
  std::vector<std::pair<double, std::string>> ratios;
  for (const Row& r : rows) {
    double ratio = gflops(r, r.tuned) / gflops(r, r.onednn);
    if (std::isfinite(ratio) && ratio > 0) ratios.emplace_back(ratio, r.label);
    md << "| " << r.label << " | `" << r.spec << "` | " << fmt(r.gflop, "%.3f") << " | "
       << fmt(gflops(r, r.untuned)) << " | "
       << (std::isfinite(r.tuned) ? fmt(gflops(r, r.tuned)) : r.tuned_note) << " | "
       << (std::isfinite(r.onednn) ? fmt(gflops(r, r.onednn)) : r.onednn_note) << " | "
       << fmt(ratio, "%.3f") << (r.side_by_side ? "*" : "") << " | " << reach_md(r.to_08) << " | "
       << reach_md(r.to_09) << " | " << (r.impl.empty() ? "-" : r.impl) << " |\n";
  }
  if (!ratios.empty()) {
    // The usual median (the mean of the middle two for an even count), not median() above,
    // which takes the upper middle of a set of timings.
    std::sort(ratios.begin(), ratios.end());
    size_t n = ratios.size();
    double mid = n % 2 ? ratios[n / 2].first : (ratios[n / 2 - 1].first + ratios[n / 2].first) / 2;
    md << "\nOver the " << n << " operator(s) with both columns: median tuned/oneDNN "
       << fmt(mid, "%.3f") << ", lowest " << fmt(ratios.front().first, "%.3f") << " ("
       << ratios.front().second << ").\n";
  }
  std::cout << md.str();
  std::ofstream(dir / "operator_suite.md") << md.str();
  // SVG
  std::vector<std::string> groups;
  mt::bench::ChartSeries su{"untuned (llvm.cpu)", "#bbbbbb", {}},
      st{"metatune tuned (llvm.cpu)", "#2b7bb9", {}}, so{"oneDNN", "#e08214", {}};
  for (const Row& r : rows) {
    groups.push_back(r.label);
    su.values.push_back(gflops(r, r.untuned));
    st.values.push_back(gflops(r, r.tuned));
    so.values.push_back(gflops(r, r.onednn));
  }
  std::ofstream(dir / "operator_suite.svg") << mt::bench::grouped_bar_chart_svg(
      std::string("Operator suite, ") + date, "GFLOPS", groups, {su, st, so});
  std::cerr << "wrote " << (dir / "operator_suite.csv").string() << ", .md, .svg\n";
  return 0;
}
