// Private to the database implementation files (database.cpp, database_jsonl.cpp): the
// connection state and thin RAII wrappers over SQLite statements and transactions.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mt {

namespace db_detail {
class Statement;
}

struct Database::Impl {
  std::string path;
  DatabaseOptions options;
  sqlite3* db = nullptr;
  // One connection per Database; the mutex makes a Database usable from several threads.
  mutable std::recursive_mutex mu;
  mutable std::vector<std::string> problems;
  // Canonical print of stored workloads by id (parsing the IR text is the costly part).
  mutable std::unordered_map<int64_t, std::string> canonical_cache;
  bool has_model_choices = false; // the table exists (a file of before it, read-only: not)

  ~Impl();
  // Throws DatabaseError "<path>: <what>: <sqlite message> (<hint>)".
  [[noreturn]] void fail(const std::string& what) const;
  void exec(const char* sql, const char* what) const;
  void note_problem(std::string message) const;

  std::string canonical_ir(int64_t id, const std::string& ir_text) const;
  WorkloadEntry read_workload(const db_detail::Statement& st) const;
  TuningRecord read_record(const db_detail::Statement& st) const;
  std::optional<WorkloadEntry> find(const std::string& canonical, uint64_t hash) const;
  bool workload_exists(int64_t id) const;
  // Records matching `where` (?1 = workload id, ?2... = text_args), at most `limit`;
  // undecodable rows are skipped and noted.
  std::vector<TuningRecord> query_records(const std::string& where,
                                          const std::vector<std::string>& text_args,
                                          int64_t workload_id, size_t limit) const;
  // The following run inside a transaction the caller holds.
  int64_t commit_workload_in_txn(const Function& f, const std::string& spec, bool* added);
  int64_t insert_record(const TuningRecord& r, const std::string& normalized_trace);
  // Stores (replacing) a choice that validate_model_choice accepted.
  void store_model_choice(const ModelChoice& c) const;
};

namespace db_detail {

int64_t now_ms();

// JSON forms of record fields (the same in the records table and in JSON-lines files).
nlohmann::json args_to_json(const std::vector<ArgInfo>& args);
std::vector<ArgInfo> args_from_json(const nlohmann::json& a);
nlohmann::json plugins_to_json(const std::vector<PluginInfo>& plugins);
std::vector<PluginInfo> plugins_from_json(const nlohmann::json& a);
std::vector<double> secs_from_json(const nlohmann::json& a);
// The trace in the form Trace::to_json writes, so that equal traces have equal text.
std::string normalized_trace(const std::string& text);
// Rejects records that must not be stored (bad run times, no target); std::invalid_argument.
void validate_for_commit(const TuningRecord& r);
// Rejects model choices without finite in-model times, target or implementation.
void validate_model_choice(const ModelChoice& c);
// The metatune_schema keys that are the schema's own ('application', 'version'), not settings.
bool is_schema_key(const std::string& key);
// The entry of kRecordSettings for `key`; null when it is not one.
const RecordSetting* record_setting_of(const std::string& key);

// Column lists in the order read_workload / read_record expect.
inline constexpr const char* kWorkloadColumns = "id, hash, spec, ir, created_at";
inline constexpr const char* kRecordColumns =
    "id, workload_id, target, trace, run_secs, error, args, seed, plugins, created_at";

class Statement {
public:
  Statement(const Database::Impl& impl, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, const std::string& v);
  Statement& bind_null(int i);
  // True when a row is available; false when done; throws naming `what` on error.
  bool step(const char* what);

  bool is_null(int col) const;
  int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  sqlite3_stmt* get() const { return stmt_; }

private:
  const Database::Impl& impl_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE (write) or BEGIN (read); rolled back unless commit() is called.
class Transaction {
public:
  Transaction(const Database::Impl& impl, bool write);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

private:
  const Database::Impl& impl_;
  bool done_ = false;
};

} // namespace db_detail

} // namespace mt
