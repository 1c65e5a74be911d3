// The tuning database: every measured candidate (its trace, run times, target, arguments,
// seed and plugin versions) filed under its workload, in one SQLite file that several tuning
// processes may write at once. A workload is keyed by its structural hash (so a workload
// tuned inside one model is found from another model that contains it) and checked against
// its stored IR text. Each commit is its own transaction, durable once the call returns.
// Schema, concurrency and the JSON-lines exchange format: docs/database.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/function.h"

namespace mt {

// Anything that goes wrong with a database file: not a metatune database, corrupted, locked
// for too long, a row that cannot be decoded. what() names the file and the workload or
// record concerned.
class DatabaseError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A record's trace does not parse or does not apply to the workload it is replayed on.
class ReplayError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Shape and element type of one argument of the measured kernel.
struct ArgInfo {
  DType dtype = DType::f32();
  std::vector<int64_t> shape;
  // A model's weight, handed over packed where the kernel took it so when the record was timed
  // (MeasureOptions::weights); stored only when set, so older databases read as before.
  bool weight = false;
  friend bool operator==(const ArgInfo&, const ArgInfo&) = default;
};
// The arguments of `f` (its params, in order).
std::vector<ArgInfo> arg_info_of(const Function& f);

// A plugin that took part in producing a record (rules, cost model, target, ...).
struct PluginInfo {
  std::string name;
  std::string version;
  friend bool operator==(const PluginInfo&, const PluginInfo&) = default;
};

// One measured (or failed) candidate.
struct TuningRecord {
  int64_t id = 0;          // assigned by commit_record; 0 = not stored
  int64_t workload_id = 0; // from commit_workload
  std::string target;      // e.g. "llvm -mcpu=skylake-avx512"
  std::string trace_json;  // Trace::to_json() of the schedule, replayable on the workload
  // Seconds per run, one entry per repeat. Empty for a failed trial, whose `error` says why.
  std::vector<double> run_secs;
  std::string error;
  std::vector<ArgInfo> args;
  uint64_t seed = 0;
  std::vector<PluginInfo> plugins;
  int64_t created_at_ms = 0; // Unix time in milliseconds; 0 = set to now by commit_record
  // Where the record was read from ("tune.db record 17"), for messages; never stored.
  std::string source;

  bool failed() const { return run_secs.empty() || !error.empty(); }
  // Mean of run_secs; +infinity for a failed trial.
  double mean_secs() const;
};

struct WorkloadEntry {
  int64_t id = 0;
  uint64_t hash = 0;   // structural_hash of the function
  std::string spec;    // canonical workload spec when known ("" otherwise)
  std::string ir_text; // print(function)
  int64_t created_at_ms = 0;
};

// 16 lowercase hex digits, as stored in the workloads table.
// A task's tuned kernel and its library implementation timed where a model runs them
// (`metatune model tune`, at its end): per call, the medians of alternating profiled runs of
// the model. A tuned kernel can be faster alone in the tuner and slower in the model, whose
// weights come from memory; the model's `best` kernels follow this choice where there is one.
struct ModelChoice {
  int64_t workload_id = 0;
  std::string target;         // the tuning target's record key
  std::string implementation; // "tuned", or the library's record key ("onednn.cpu")
  double tuned_seconds = 0, library_seconds = 0;
  int64_t created_at_ms = 0; // Unix time in milliseconds; 0 = set to now by set_model_choice
};

// Settings that say how every record of a database was measured: times measured one way do
// not compare with times measured another, so a database keeps one value, and an import of
// records measured otherwise is refused. A database with records and no value stored for
// such a setting was written before the setting existed; its records have `before`.
struct RecordSetting {
  const char* key;
  const char* before;
};
// Hot or cold inputs: the tuner's cold-inputs policy (core/measure/cold_inputs.h), "off" for
// the records of before.
inline constexpr const char* kMeasuredInputs = "measured_inputs";
inline constexpr RecordSetting kRecordSettings[] = {{kMeasuredInputs, "off"}};

std::string hash_to_hex(uint64_t hash);
std::optional<uint64_t> hash_from_hex(const std::string& hex);

struct DatabaseOptions {
  // How long a write waits for another process holding the write lock before failing.
  int busy_timeout_ms = 60000;
  // false: a commit survives the process being killed (SIGKILL, crash) but not a power cut;
  // true: also fsync on every commit (slower; for databases on machines that may lose power).
  bool sync_every_commit = false;
  // Open an existing database for reading only; nothing is ever written to the file.
  bool read_only = false;
};

struct ImportStats {
  size_t workloads_added = 0;
  size_t workloads_existing = 0;
  size_t records_added = 0;
  size_t records_duplicate = 0; // already present (same workload, target, trace, times, time)
  size_t model_choices_added = 0; // new, or newer than the one here (which they replace)
  size_t model_choices_kept = 0;  // the one here is as new or newer: kept
  size_t settings_added = 0;      // settings this database had no value for
  std::map<std::string, size_t> records_by_target; // of records_added
  // One message per line that could not be imported ("file:line: why"); the others are.
  std::vector<std::string> errors;
};

struct ExportStats {
  size_t workloads = 0;
  size_t records = 0;
  size_t model_choices = 0;
  size_t settings = 0;
  // Rows that could not be decoded and were left out (their messages name the row).
  std::vector<std::string> errors;
};

class Database {
public:
  // Opens `path`, creating an empty database if the file does not exist (or is empty).
  // Throws DatabaseError, without modifying the file, if it is not a metatune database
  // (another SQLite database, or not SQLite at all), if it was written by a newer schema, or
  // if SQLite finds it corrupted.
  static std::unique_ptr<Database> open(const std::string& path,
                                        const DatabaseOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const;
  static constexpr int kSchemaVersion = 1;

  // ---- workloads ----
  // Id of the workload structurally equal to `f`, adding it if absent. A non-empty `spec`
  // fills in the spec of an entry that has none. Safe against concurrent processes: they all
  // get the same id.
  int64_t commit_workload(const Function& f, const std::string& spec = "");
  // The entry structurally equal to `f` (hash match confirmed on the IR text), if any.
  std::optional<WorkloadEntry> find_workload(const Function& f) const;
  std::optional<WorkloadEntry> workload(int64_t id) const;
  bool has_workload(uint64_t hash) const;
  std::vector<WorkloadEntry> workloads() const;
  // The stored function of a workload (parsed from its IR text).
  Function workload_function(int64_t id) const;

  // ---- records ----
  // Stores a record in its own transaction and returns its id; `workload_id` must exist and
  // `trace_json` must be a trace (Trace::from_json). Durable once this returns.
  int64_t commit_record(const TuningRecord& record);
  // Adds run times measured again later (the tuner re-measures its best candidates) to a
  // successful record; its mean becomes the mean over all of them. Returns the updated record.
  // The times already stored are kept. Throws DatabaseError for a missing or failed record or
  // a time that is not finite and positive.
  TuningRecord append_run_secs(int64_t record_id, const std::vector<double>& run_secs);
  // Successful records of a workload on `target`, fastest first (ties: oldest first), at most
  // `k`. Rows that cannot be decoded are skipped and reported through take_problems().
  std::vector<TuningRecord> top_k(int64_t workload_id, const std::string& target, size_t k) const;
  std::vector<TuningRecord> top_k(const Function& workload, const std::string& target,
                                  size_t k) const;
  std::optional<TuningRecord> best(int64_t workload_id, const std::string& target) const;
  std::optional<TuningRecord> best(const Function& workload, const std::string& target) const;
  // Every record of a workload (failed ones too, for cost-model training), oldest first.
  // An empty `target` means all targets.
  std::vector<TuningRecord> records(int64_t workload_id, const std::string& target = "") const;
  // Counts failed trials too. An empty `target` means all targets.
  size_t record_count(int64_t workload_id, const std::string& target = "") const;
  size_t record_count() const;
  // One record by id; throws DatabaseError naming the file and id if absent or undecodable.
  TuningRecord record(int64_t id) const;

  // ---- model choices: which implementation of a task is faster inside a model ----
  // Stores (replacing) the choice for (workload, tuning target).
  void set_model_choice(const ModelChoice& choice);
  std::optional<ModelChoice> model_choice(int64_t workload_id, const std::string& target) const;

  // ---- settings: facts about the whole database, in its metatune_schema table ----
  // The value stored under `key`, if any.
  std::optional<std::string> setting(const std::string& key) const;
  // Stores `value` under `key` (replacing one there). Not for 'application' or 'version'.
  void set_setting(const std::string& key, const std::string& value);
  // A record setting's value (kRecordSettings): the stored one; else its `before` when the
  // database has records; else none (an empty database takes the first run's).
  std::optional<std::string> record_setting(const std::string& key) const;

  // Messages about rows skipped by reads since the last call (each names file and row).
  std::vector<std::string> take_problems() const;
  // Full check: SQLite's integrity check plus decoding every workload and record (traces
  // included). Returns one message per problem; empty when the database is sound.
  std::vector<std::string> check() const;

  // ---- exchange ----
  // JSON lines: the settings, then one object per workload, each followed by the objects of
  // its records and model choices.
  ExportStats export_jsonl(std::ostream& out) const;
  ExportStats export_jsonl(const std::string& path) const;
  // Adds the workloads, records and model choices of a JSON-lines file (as written by
  // export_jsonl), in one transaction; bad lines are skipped and reported, records already
  // present are not doubled, of two model choices the newer is kept. Throws DatabaseError,
  // importing nothing, when the file's records were measured otherwise (kRecordSettings).
  ImportStats import_jsonl(std::istream& in, const std::string& source_name = "<input>");
  ImportStats import_jsonl(const std::string& path);

  struct Impl;

private:
  explicit Database(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The scheduled function of a record: its trace replayed with its decisions on a fresh
// schedule of `workload`. Throws ReplayError naming the record if the trace does not parse or
// does not apply.
Function replay(const TuningRecord& record, const Function& workload);

} // namespace mt
