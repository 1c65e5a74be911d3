// `metatune db export|import|check`: moving tuning databases between machines and checking
// them. Export writes JSON lines (docs/database.md): how the records were measured, every
// workload with its records and the choices made inside a model. Import merges such files
// into a database, refusing whole a file whose records were measured otherwise.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/plugin/plugin_host.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "hosts/cli/command.h"
#include "hosts/cli/tune_flags.h"

namespace mt::cli {

namespace {

struct DbOptions {
  std::string db;
  std::string out = "-";
  std::vector<std::string> files;
  std::vector<std::string> plugin_paths;
  bool json = false;
  std::string log_level;
};

void print_skipped(const std::vector<std::string>& errors) {
  for (const std::string& e : errors)
    std::cerr << "warning: " << e << "\n";
}

int export_db(const DbOptions& opt) {
  DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<Database> db = Database::open(opt.db, ro);
  ExportStats s;
  if (opt.out == "-") {
    s = db->export_jsonl(std::cout);
  } else {
    // Written next to the destination and renamed: an export that fails halfway leaves the
    // file that was there before, not half of a new one.
    const std::string tmp = opt.out + ".partial";
    try {
      s = db->export_jsonl(tmp);
    } catch (...) {
      std::remove(tmp.c_str());
      throw;
    }
    if (std::rename(tmp.c_str(), opt.out.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw std::runtime_error(opt.out + ": cannot write (renaming " + tmp + " failed)");
    }
  }
  print_skipped(s.errors);
  std::cerr << "exported " << s.workloads << " workload(s), " << s.records << " record(s), "
            << s.model_choices << " model choice(s), " << s.settings << " setting(s)"
            << (opt.out == "-" ? std::string() : " to " + opt.out)
            << (s.errors.empty()
                    ? ""
                    : "; " + std::to_string(s.errors.size()) + " damaged row(s) left out")
            << "\n";
  return s.errors.empty() ? 0 : 1;
}

// "llvm -mcpu=znver3" of "llvm -mtriple=... -mcpu=znver3 -mattr=...": what tells two CPU
// targets apart for a reader.
std::string short_target(const std::string& target) {
  const size_t cpu = target.find(" -mcpu=");
  if (cpu == std::string::npos) return target;
  return target.substr(0, target.find(' ')) + target.substr(cpu, target.find(' ', cpu + 1) - cpu);
}

// Records of a CPU target other than this machine's are kept, but tuning, `best` and models
// here look up this machine's target string: said, so that an import from another machine
// does not look like it did nothing.
void warn_other_targets(const std::map<std::string, size_t>& by_target,
                        const std::vector<std::string>& plugin_paths) {
  bool any_llvm = false;
  for (const auto& [target, n] : by_target)
    any_llvm |= target.rfind("llvm", 0) == 0;
  if (!any_llvm) return;
  PluginHost host;
  host.discover(plugin_search_path(plugin_paths));
  std::string here;
  try {
    here = setup_target(host, "llvm").target_string;
  } catch (const std::exception&) {
    return; // no CPU target here to compare with
  }
  for (const auto& [target, n] : by_target)
    if (target.rfind("llvm", 0) == 0 && target != here)
      std::cerr << "note: " << n << " record(s) are for '" << short_target(target)
                << "', not this machine's '" << short_target(here)
                << "': tuning, best and models here use this machine's target and will not "
                   "find them (`metatune best --target` shows them)\n";
}

int import_db(const DbOptions& opt) {
  std::unique_ptr<Database> db = Database::open(opt.db);
  nlohmann::json out = nlohmann::json::array();
  size_t skipped = 0;
  std::map<std::string, size_t> by_target;
  for (const std::string& file : opt.files) {
    // Each file in one transaction: a refused file leaves the database as it was, and the
    // files before it stay imported.
    ImportStats s = file == "-" ? db->import_jsonl(std::cin, "<stdin>") : db->import_jsonl(file);
    print_skipped(s.errors);
    skipped += s.errors.size();
    for (const auto& [target, n] : s.records_by_target)
      by_target[target] += n;
    if (opt.json) {
      out.push_back({{"file", file},
                     {"workloads_added", s.workloads_added},
                     {"workloads_existing", s.workloads_existing},
                     {"records_added", s.records_added},
                     {"records_duplicate", s.records_duplicate},
                     {"model_choices_added", s.model_choices_added},
                     {"model_choices_kept", s.model_choices_kept},
                     {"settings_added", s.settings_added},
                     {"lines_skipped", s.errors.size()}});
      continue;
    }
    std::cout << file << ": " << s.records_added << " record(s) added, " << s.records_duplicate
              << " already here; " << s.workloads_added << " new workload(s); "
              << s.model_choices_added << " model choice(s) added";
    if (s.model_choices_kept) std::cout << " (" << s.model_choices_kept << " newer here kept)";
    if (s.settings_added) std::cout << "; " << s.settings_added << " setting(s) taken";
    if (!s.errors.empty()) std::cout << "; " << s.errors.size() << " line(s) skipped";
    std::cout << "\n";
  }
  if (opt.json) std::cout << out.dump() << "\n";
  warn_other_targets(by_target, opt.plugin_paths);
  return skipped == 0 ? 0 : 1;
}

int check_db(const DbOptions& opt) {
  DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<Database> db = Database::open(opt.db, ro);
  std::vector<std::string> problems = db->check();
  for (const std::string& p : problems)
    std::cout << p << "\n";
  if (problems.empty())
    std::cout << opt.db << ": sound (" << db->workloads().size() << " workload(s), "
              << db->record_count() << " record(s))\n";
  return problems.empty() ? 0 : 1;
}

RegisterCommand reg("db", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<DbOptions>();
  CLI::App* db = app.add_subcommand("db", "Export, import and check tuning databases");
  db->require_subcommand(1);
  CLI::App* exp = db->add_subcommand(
      "export", "Write a database as JSON lines: settings, workloads, records, model choices");
  exp->add_option("--db", opt->db, "Tuning database")->required();
  exp->add_option("-o,--out", opt->out, "File to write ('-' = standard output)")
      ->capture_default_str();
  CLI::App* imp = db->add_subcommand(
      "import", "Merge JSON-lines exports into a database (created if absent). Exit status 1 "
                "when lines were skipped (the others are imported)");
  imp->add_option("--db", opt->db, "Tuning database")->required();
  imp->add_option("files", opt->files, "JSON-lines files ('-' = standard input)")->required();
  imp->add_flag("--json", opt->json, "Print one JSON array, an object per file");
  imp->add_option("--plugin-path", opt->plugin_paths,
                  "Also load plugins from this directory (to name this machine's target)");
  CLI::App* chk = db->add_subcommand(
      "check", "Check a database: SQLite's integrity check, then every workload and record "
               "decoded. Exit status 1 when a problem is found");
  chk->add_option("--db", opt->db, "Tuning database")->required();
  for (CLI::App* c : {exp, imp, chk})
    c->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error or off");
  return [opt, exp, imp] {
    configure_logging(opt->log_level);
    if (exp->parsed()) return export_db(*opt);
    if (imp->parsed()) return import_db(*opt);
    return check_db(*opt);
  };
});

} // namespace

} // namespace mt::cli
