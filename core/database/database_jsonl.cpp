// JSON-lines export and import of a tuning database (format: docs/database.md).
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>

#include "core/ir/parser.h"
#include "core/database/database.h"
#include "core/database/database_impl.h"

namespace mt {

using json = nlohmann::json;
using namespace db_detail;

namespace {

constexpr const char* kFormatName = "metatune-tuning-records";
constexpr int kFormatVersion = 1;

json model_choice_to_json(const ModelChoice& c) {
  return {{"type", "model_choice"},
          {"workload", c.workload_id},
          {"target", c.target},
          {"implementation", c.implementation},
          {"tuned_secs", c.tuned_seconds},
          {"library_secs", c.library_seconds},
          {"created_at_ms", c.created_at_ms}};
}

// The settings of a file being imported, checked against the database's once every line is
// read: a file of before the settings has none, and what its records were measured with
// follows from whether it has records at all.
class ImportedSettings {
public:
  explicit ImportedSettings(const Database& db) {
    for (const RecordSetting& s : kRecordSettings)
      here_[s.key] = db.record_setting(s.key);
  }

  void add(const std::string& key, const std::string& value) {
    if (is_schema_key(key)) throw std::runtime_error("'" + key + "' is the schema's own");
    if (!file_.emplace(key, value).second && file_[key] != value)
      throw std::runtime_error("setting '" + key + "' given twice, with different values");
  }
  void saw_record() { has_records_ = true; }

  // Throws DatabaseError (the caller's transaction then keeps nothing) when the file's records
  // were measured otherwise than this database's; stores the values it lacks.
  void apply(Database& db, const std::string& source, ImportStats& stats) const {
    for (const RecordSetting& s : kRecordSettings) {
      std::optional<std::string> file;
      if (auto it = file_.find(s.key); it != file_.end())
        file = it->second;
      else if (has_records_)
        file = s.before;
      const std::optional<std::string>& here = here_.at(s.key);
      if (file && here && *file != *here)
        throw DatabaseError(source + ": its records were measured with " + s.key + " = '" + *file +
                            "', those of " + db.path() + " with '" + *here +
                            "'; nothing imported (the times would not compare)");
      if (file && !db.setting(s.key)) {
        db.set_setting(s.key, *file);
        ++stats.settings_added;
      }
    }
    for (const auto& [key, value] : file_) {
      if (record_setting_of(key)) continue;
      std::optional<std::string> here = db.setting(key);
      if (!here) {
        db.set_setting(key, value);
        ++stats.settings_added;
      } else if (*here != value) {
        stats.errors.push_back(source + ": setting '" + key + "' is '" + value + "' there and '" +
                               *here + "' here; kept '" + *here + "'");
      }
    }
  }

private:
  std::map<std::string, std::optional<std::string>> here_; // before the import
  std::map<std::string, std::string> file_;
  bool has_records_ = false;
};

} // namespace

ExportStats Database::export_jsonl(std::ostream& out) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  ExportStats stats;
  // One read transaction: the export is a consistent snapshot while others keep writing.
  Transaction txn(*impl_, false);
  out << json{{"type", kFormatName}, {"version", kFormatVersion}}.dump() << '\n';
  // Settings first, so that a reader knows how the records that follow were measured; a
  // record setting this database has only implicitly (a file of before it) is written out.
  std::map<std::string, std::string> settings;
  {
    Statement ss(*impl_, "SELECT key, value FROM metatune_schema ORDER BY key");
    while (ss.step("reading settings"))
      if (!is_schema_key(ss.text(0))) settings[ss.text(0)] = ss.text(1);
  }
  for (const RecordSetting& s : kRecordSettings)
    if (!settings.count(s.key))
      if (std::optional<std::string> v = record_setting(s.key)) settings[s.key] = *v;
  for (const auto& [key, value] : settings) {
    out << json{{"type", "setting"}, {"key", key}, {"value", value}}.dump() << '\n';
    ++stats.settings;
  }
  Statement ws(*impl_, std::string("SELECT ") + kWorkloadColumns + " FROM workloads ORDER BY id");
  while (ws.step("reading workloads")) {
    WorkloadEntry w;
    try {
      w = impl_->read_workload(ws);
    } catch (const DatabaseError& e) {
      stats.errors.push_back(e.what());
      continue;
    }
    out << json{{"type", "workload"}, {"id", w.id},      {"hash", hash_to_hex(w.hash)},
                {"spec", w.spec},     {"ir", w.ir_text}, {"created_at_ms", w.created_at_ms}}
               .dump()
        << '\n';
    ++stats.workloads;
    Statement rs(*impl_, std::string("SELECT ") + kRecordColumns +
                             " FROM records WHERE workload_id = ?1 ORDER BY id");
    rs.bind(1, w.id);
    while (rs.step("reading records")) {
      try {
        TuningRecord r = impl_->read_record(rs);
        json j = {{"type", "record"},
                  {"id", r.id},
                  {"workload", r.workload_id},
                  {"target", r.target},
                  {"trace", json::parse(r.trace_json)},
                  {"run_secs", r.run_secs},
                  {"args", args_to_json(r.args)},
                  {"seed", r.seed},
                  {"plugins", plugins_to_json(r.plugins)},
                  {"created_at_ms", r.created_at_ms}};
        if (!r.error.empty()) j["error"] = r.error;
        out << j.dump() << '\n';
        ++stats.records;
      } catch (const std::exception& e) {
        stats.errors.push_back(e.what());
      }
    }
    if (!impl_->has_model_choices) continue;
    Statement cs(*impl_, "SELECT target, implementation, tuned_secs, library_secs, created_at "
                         "FROM model_choices WHERE workload_id = ?1 ORDER BY target");
    cs.bind(1, w.id);
    while (cs.step("reading model choices")) {
      ModelChoice c{w.id, cs.text(0), cs.text(1), cs.real(2), cs.real(3), cs.int64(4)};
      out << model_choice_to_json(c).dump() << '\n';
      ++stats.model_choices;
    }
  }
  txn.commit();
  out.flush();
  if (!out) throw DatabaseError(path() + ": writing the JSON-lines export failed");
  return stats;
}

ExportStats Database::export_jsonl(const std::string& file) const {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw DatabaseError(file + ": cannot open for writing");
  ExportStats stats = export_jsonl(out);
  out.close();
  if (!out) throw DatabaseError(file + ": writing failed");
  return stats;
}

ImportStats Database::import_jsonl(std::istream& in, const std::string& source_name) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  ImportStats stats;
  std::map<int64_t, int64_t> workload_ids; // id in the file -> id here
  Transaction txn(*impl_, true);
  ImportedSettings settings(*this);
  auto workload_here = [&](const json& j, const char* what) {
    int64_t file_wid = j.at("workload").get<int64_t>();
    auto it = workload_ids.find(file_wid);
    if (it == workload_ids.end())
      throw std::runtime_error(std::string(what) + " of workload " + std::to_string(file_wid) +
                               ", which no earlier line defines (or its line was rejected)");
    return it->second;
  };
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = source_name + ":" + std::to_string(line_no) + ": ";
    try {
      json j;
      try {
        j = json::parse(line);
      } catch (const json::exception& e) {
        throw std::runtime_error(std::string("not JSON: ") + e.what());
      }
      if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        throw std::runtime_error("not an object with a \"type\"");
      const std::string type = j["type"].get<std::string>();
      if (type == kFormatName) {
        if (j.value("version", 0) > kFormatVersion)
          throw std::runtime_error("written in format version " +
                                   std::to_string(j.value("version", 0)) +
                                   ", this metatune reads up to " + std::to_string(kFormatVersion));
      } else if (type == "workload") {
        int64_t file_id = j.at("id").get<int64_t>();
        Function f = parse_function(j.at("ir").get<std::string>(), where + "workload IR");
        bool added = false;
        int64_t id = impl_->commit_workload_in_txn(f, j.value("spec", std::string()), &added);
        workload_ids[file_id] = id;
        ++(added ? stats.workloads_added : stats.workloads_existing);
      } else if (type == "setting") {
        settings.add(j.at("key").get<std::string>(), j.at("value").get<std::string>());
      } else if (type == "record") {
        settings.saw_record();
        TuningRecord r;
        r.workload_id = workload_here(j, "record");
        r.target = j.at("target").get<std::string>();
        r.trace_json = j.at("trace").dump();
        r.run_secs = secs_from_json(j.at("run_secs"));
        r.error = j.value("error", std::string());
        r.args = args_from_json(j.at("args"));
        r.seed = j.at("seed").get<uint64_t>();
        r.plugins = plugins_from_json(j.at("plugins"));
        r.created_at_ms = j.at("created_at_ms").get<int64_t>();
        validate_for_commit(r);
        std::string trace;
        try {
          trace = normalized_trace(r.trace_json);
        } catch (const std::exception& e) {
          throw std::runtime_error(std::string("trace does not parse: ") + e.what());
        }
        Statement dup(*impl_, "SELECT 1 FROM records WHERE workload_id = ?1 AND target = ?2 AND "
                              "trace = ?3 AND run_secs = ?4 AND seed = ?5 AND created_at = ?6");
        dup.bind(1, r.workload_id).bind(2, r.target).bind(3, trace);
        dup.bind(4, json(r.run_secs).dump()).bind(5, static_cast<int64_t>(r.seed));
        dup.bind(6, r.created_at_ms);
        if (dup.step("looking for a duplicate record")) {
          ++stats.records_duplicate;
          continue;
        }
        impl_->insert_record(r, trace);
        ++stats.records_added;
        ++stats.records_by_target[r.target];
      } else if (type == "model_choice") {
        ModelChoice c{
            workload_here(j, "model choice"),          j.at("target").get<std::string>(),
            j.at("implementation").get<std::string>(), j.at("tuned_secs").get<double>(),
            j.at("library_secs").get<double>(),        j.at("created_at_ms").get<int64_t>()};
        std::optional<ModelChoice> here = model_choice(c.workload_id, c.target);
        if (here && here->created_at_ms >= c.created_at_ms) {
          ++stats.model_choices_kept;
          continue;
        }
        validate_model_choice(c);
        impl_->store_model_choice(c);
        ++stats.model_choices_added;
      } else {
        throw std::runtime_error("unknown line type '" + type + "'");
      }
    } catch (const DatabaseError&) {
      throw; // the database itself failed: nothing of this import is kept
    } catch (const std::exception& e) {
      stats.errors.push_back(where + e.what());
    }
  }
  if (in.bad()) throw DatabaseError(source_name + ": reading failed");
  settings.apply(*this, source_name, stats);
  txn.commit();
  return stats;
}

ImportStats Database::import_jsonl(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw DatabaseError(file + ": is a directory, not a JSON-lines file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DatabaseError(file + ": cannot open for reading");
  return import_jsonl(in, file);
}

} // namespace mt
