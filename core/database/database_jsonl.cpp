// JSON-lines export and import of a tuning database (format: docs/database.md).
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

} // namespace

ExportStats Database::export_jsonl(std::ostream& out) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  ExportStats stats;
  // One read transaction: the export is a consistent snapshot while others keep writing.
  Transaction txn(*impl_, false);
  out << json{{"type", kFormatName}, {"version", kFormatVersion}}.dump() << '\n';
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
      } else if (type == "record") {
        int64_t file_wid = j.at("workload").get<int64_t>();
        auto it = workload_ids.find(file_wid);
        if (it == workload_ids.end())
          throw std::runtime_error("record of workload " + std::to_string(file_wid) +
                                   ", which no earlier line defines (or its line was rejected)");
        TuningRecord r;
        r.workload_id = it->second;
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
  txn.commit();
  return stats;
}

ImportStats Database::import_jsonl(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DatabaseError(file + ": cannot open for reading");
  return import_jsonl(in, file);
}

} // namespace mt
