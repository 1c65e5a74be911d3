#include "core/database/database.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/ir/parser.h"
#include "core/ir/printer.h"
#include "core/ir/structural.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/database/database_impl.h"

namespace mt {

using json = nlohmann::json;

// ---- plain helpers --------------------------------------------------------------------------

double TuningRecord::mean_secs() const {
  if (failed()) return std::numeric_limits<double>::infinity();
  double s = 0;
  for (double t : run_secs)
    s += t;
  return s / static_cast<double>(run_secs.size());
}

std::vector<ArgInfo> arg_info_of(const Function& f) {
  std::vector<ArgInfo> out;
  for (const Buffer& b : f.params)
    out.push_back({b->dtype, b->shape});
  return out;
}

std::string hash_to_hex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::optional<uint64_t> hash_from_hex(const std::string& hex) {
  if (hex.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : hex) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

namespace db_detail {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- SQLite wrappers ---------------------------------------------------------------------

Statement::Statement(const Database::Impl& impl, const std::string& sql) : impl_(impl) {
  if (sqlite3_prepare_v2(impl.db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK) {
    // Preparing reads the schema: a damaged file shows up here first.
    int code = sqlite3_errcode(impl.db);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) impl.fail("reading the schema");
    impl.fail("preparing '" + sql + "'");
  }
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Statement& Statement::bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}
Statement& Statement::bind(int i, const std::string& v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool Statement::step(const char* what) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  impl_.fail(what);
}

bool Statement::is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
int64_t Statement::int64(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Statement::real(int col) const {
  return sqlite3_column_double(stmt_, col);
}
std::string Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

Transaction::Transaction(const Database::Impl& impl, bool write) : impl_(impl) {
  impl.exec(write ? "BEGIN IMMEDIATE" : "BEGIN", write ? "starting a write" : "starting a read");
}
void Transaction::commit() {
  impl_.exec("COMMIT", "committing");
  done_ = true;
}
Transaction::~Transaction() {
  if (!done_) sqlite3_exec(impl_.db, "ROLLBACK", nullptr, nullptr, nullptr);
}

bool is_schema_key(const std::string& key) {
  return key == "application" || key == "version";
}

const RecordSetting* record_setting_of(const std::string& key) {
  for (const RecordSetting& s : kRecordSettings)
    if (key == s.key) return &s;
  return nullptr;
}

void validate_model_choice(const ModelChoice& c) {
  if (!(std::isfinite(c.tuned_seconds) && std::isfinite(c.library_seconds) &&
        c.tuned_seconds >= 0 && c.library_seconds >= 0))
    throw std::invalid_argument("a model choice needs both in-model times");
  if (c.implementation.empty() || c.target.empty())
    throw std::invalid_argument("a model choice needs a target and an implementation");
}

json args_to_json(const std::vector<ArgInfo>& args) {
  json a = json::array();
  for (const ArgInfo& x : args) {
    a.push_back({{"dtype", to_string(x.dtype)}, {"shape", x.shape}});
    if (x.weight) a.back()["weight"] = true;
  }
  return a;
}

std::vector<ArgInfo> args_from_json(const json& a) {
  if (!a.is_array()) throw std::runtime_error("argument list is not an array");
  std::vector<ArgInfo> out;
  for (const json& x : a) {
    auto dt = parse_dtype(x.at("dtype").get<std::string>());
    if (!dt) throw std::runtime_error("unknown dtype '" + x.at("dtype").get<std::string>() + "'");
    const json* weight = x.contains("weight") ? &x.at("weight") : nullptr;
    if (weight && !weight->is_boolean())
      throw std::runtime_error("argument " + std::to_string(out.size()) +
                               ": 'weight' is not true or false");
    out.push_back({*dt, x.at("shape").get<std::vector<int64_t>>(), weight && weight->get<bool>()});
  }
  return out;
}

json plugins_to_json(const std::vector<PluginInfo>& ps) {
  json a = json::array();
  for (const PluginInfo& p : ps)
    a.push_back({{"name", p.name}, {"version", p.version}});
  return a;
}

std::vector<PluginInfo> plugins_from_json(const json& a) {
  if (!a.is_array()) throw std::runtime_error("plugin list is not an array");
  std::vector<PluginInfo> out;
  for (const json& x : a)
    out.push_back({x.at("name").get<std::string>(), x.at("version").get<std::string>()});
  return out;
}

std::vector<double> secs_from_json(const json& a) {
  if (!a.is_array()) throw std::runtime_error("run times are not an array");
  std::vector<double> out;
  for (const json& x : a) {
    if (!x.is_number()) throw std::runtime_error("run time is not a number");
    out.push_back(x.get<double>());
  }
  return out;
}

// The trace in the form Trace::to_json writes, so equal traces have equal text.
std::string normalized_trace(const std::string& text) {
  return Trace::from_json(text).to_json();
}

void validate_for_commit(const TuningRecord& r) {
  for (double t : r.run_secs)
    if (!std::isfinite(t) || t < 0)
      throw std::invalid_argument("run time " + std::to_string(t) + " is not a finite duration");
  if (r.target.empty()) throw std::invalid_argument("the target is empty");
}

} // namespace db_detail

using namespace db_detail;

// ---- Impl ---------------------------------------------------------------------------------

Database::Impl::~Impl() {
  if (db) sqlite3_close_v2(db);
}

void Database::Impl::fail(const std::string& what) const {
  int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  std::string hint;
  switch (code & 0xff) {
  case SQLITE_CORRUPT:
    hint = " (the database file is corrupted)";
    break;
  case SQLITE_NOTADB:
    hint = " (not a metatune database)";
    break;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    hint = " (another process held the database for more than " +
           std::to_string(options.busy_timeout_ms) + " ms)";
    break;
  case SQLITE_READONLY:
    hint = " (opened read-only)";
    break;
  default:
    break;
  }
  throw DatabaseError(path + ": " + what + ": " + msg + hint);
}

void Database::Impl::exec(const char* sql, const char* what) const {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    fail(what);
  }
}

void Database::Impl::note_problem(std::string message) const {
  problems.push_back(std::move(message));
}

std::string Database::Impl::canonical_ir(int64_t id, const std::string& ir_text) const {
  auto it = canonical_cache.find(id);
  if (it != canonical_cache.end()) return it->second;
  Function f = parse_function(ir_text, path + " workload " + std::to_string(id));
  std::string c = print(f, PrintOptions{true});
  canonical_cache.emplace(id, c);
  return c;
}

WorkloadEntry Database::Impl::read_workload(const Statement& st) const {
  WorkloadEntry w;
  w.id = st.int64(0);
  std::string hex = st.text(1);
  auto h = hash_from_hex(hex);
  if (!h)
    throw DatabaseError(path + ": workload " + std::to_string(w.id) + ": bad hash '" + hex + "'");
  w.hash = *h;
  w.spec = st.text(2);
  w.ir_text = st.text(3);
  w.created_at_ms = st.int64(4);
  return w;
}

TuningRecord Database::Impl::read_record(const Statement& st) const {
  TuningRecord r;
  r.id = st.int64(0);
  r.source = path + " record " + std::to_string(r.id);
  try {
    r.workload_id = st.int64(1);
    r.target = st.text(2);
    r.trace_json = st.text(3);
    try {
      Trace::from_json(r.trace_json);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("trace does not parse: ") + e.what());
    }
    if (!st.is_null(4)) r.run_secs = secs_from_json(json::parse(st.text(4)));
    if (!st.is_null(5)) r.error = st.text(5);
    r.args = args_from_json(json::parse(st.text(6)));
    r.seed = static_cast<uint64_t>(st.int64(7));
    r.plugins = plugins_from_json(json::parse(st.text(8)));
    r.created_at_ms = st.int64(9);
  } catch (const DatabaseError&) {
    throw;
  } catch (const std::exception& e) {
    throw DatabaseError(r.source + ": " + e.what());
  }
  return r;
}

// Finds the workload structurally equal to `f` (call with the mutex held).
std::optional<WorkloadEntry> Database::Impl::find(const std::string& canonical,
                                                  uint64_t hash) const {
  Statement st(*this, std::string("SELECT ") + kWorkloadColumns +
                          " FROM workloads WHERE hash = ?1 ORDER BY id");
  st.bind(1, hash_to_hex(hash));
  while (st.step("looking up a workload")) {
    WorkloadEntry w = read_workload(st);
    try {
      if (canonical_ir(w.id, w.ir_text) == canonical) return w;
    } catch (const std::exception& e) {
      note_problem(path + ": workload " + std::to_string(w.id) +
                   ": IR does not parse: " + e.what());
    }
  }
  return std::nullopt;
}

int64_t Database::Impl::commit_workload_in_txn(const Function& f, const std::string& spec,
                                               bool* added) {
  std::string canonical = print(f, PrintOptions{true});
  uint64_t hash = structural_hash(f);
  if (auto w = find(canonical, hash)) {
    if (added) *added = false;
    if (!spec.empty() && w->spec.empty()) {
      Statement up(*this, "UPDATE workloads SET spec = ?1 WHERE id = ?2");
      up.bind(1, spec).bind(2, w->id).step("recording the spec of a workload");
    }
    return w->id;
  }
  Statement ins(*this,
                "INSERT INTO workloads (hash, spec, ir, created_at) VALUES (?1, ?2, ?3, ?4)");
  ins.bind(1, hash_to_hex(hash)).bind(2, spec).bind(3, print(f)).bind(4, now_ms());
  ins.step("adding a workload");
  int64_t id = sqlite3_last_insert_rowid(db);
  canonical_cache.emplace(id, std::move(canonical));
  if (added) *added = true;
  return id;
}

int64_t Database::Impl::insert_record(const TuningRecord& r, const std::string& trace) {
  Statement ins(*this, "INSERT INTO records (workload_id, target, trace, run_secs, mean_secs, "
                       "error, args, seed, plugins, created_at) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  ins.bind(1, r.workload_id).bind(2, r.target).bind(3, trace);
  ins.bind(4, json(r.run_secs).dump());
  if (r.failed())
    ins.bind_null(5);
  else
    ins.bind(5, r.mean_secs());
  if (r.error.empty())
    ins.bind_null(6);
  else
    ins.bind(6, r.error);
  ins.bind(7, args_to_json(r.args).dump());
  ins.bind(8, static_cast<int64_t>(r.seed));
  ins.bind(9, plugins_to_json(r.plugins).dump());
  ins.bind(10, r.created_at_ms ? r.created_at_ms : now_ms());
  ins.step("adding a record");
  return sqlite3_last_insert_rowid(db);
}

bool Database::Impl::workload_exists(int64_t id) const {
  Statement st(*this, "SELECT 1 FROM workloads WHERE id = ?1");
  st.bind(1, id);
  return st.step("looking up a workload");
}

// ---- opening ------------------------------------------------------------------------------

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS metatune_schema (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL);
INSERT OR IGNORE INTO metatune_schema (key, value) VALUES
  ('application', 'metatune tuning database'), ('version', '1');
CREATE TABLE IF NOT EXISTS workloads (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  hash TEXT NOT NULL,
  spec TEXT NOT NULL DEFAULT '',
  ir TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS workloads_by_hash ON workloads (hash);
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,
  trace TEXT NOT NULL,
  run_secs TEXT NOT NULL,
  mean_secs REAL,
  error TEXT,
  args TEXT NOT NULL,
  seed INTEGER NOT NULL,
  plugins TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_speed ON records (workload_id, target, mean_secs);
)sql";

// Added after version 1 without a version change: created on every writable open, absent
// (no choices) in an older file opened read-only.
constexpr const char* kModelChoicesSchema = R"sql(
CREATE TABLE IF NOT EXISTS model_choices (
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,
  implementation TEXT NOT NULL,
  tuned_secs REAL NOT NULL,
  library_secs REAL NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (workload_id, target));
)sql";

constexpr const char* kSchemaTables[] = {"metatune_schema", "workloads", "records"};

// Looks at the first bytes without SQLite, so that a foreign file is never touched.
void check_file_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatabaseError(path + ": cannot read the file");
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() != sizeof header || std::memcmp(header, "SQLite format 3", 16) != 0)
    throw DatabaseError(path + ": not a metatune database (the file is not an SQLite database)");
}

std::set<std::string> table_names(Database::Impl& impl) {
  std::set<std::string> names;
  Statement st(impl, "SELECT name FROM sqlite_master WHERE type = 'table'");
  while (st.step("reading the schema"))
    names.insert(st.text(0));
  return names;
}

} // namespace

std::unique_ptr<Database> Database::open(const std::string& path, const DatabaseOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;

  std::error_code ec;
  bool exists = std::filesystem::exists(path, ec);
  if (exists && std::filesystem::is_directory(path, ec))
    throw DatabaseError(path + ": is a directory, not a database file");
  bool empty_file = exists && std::filesystem::file_size(path, ec) == 0 && !ec;
  if (options.read_only && !exists) throw DatabaseError(path + ": no such database file");
  if (exists && !empty_file) check_file_header(path);

  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK)
    impl->fail("opening");
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_timeout(impl->db, options.busy_timeout_ms);

  std::set<std::string> tables = table_names(*impl);
  if (!tables.count("metatune_schema")) {
    if (!tables.empty()) {
      std::string list;
      for (const std::string& t : tables)
        list += (list.empty() ? "" : ", ") + t;
      throw DatabaseError(path + ": not a metatune database (an SQLite database with tables " +
                          list + ")");
    }
    if (options.read_only) throw DatabaseError(path + ": empty file, not a metatune database");
    // A new database. The schema is written inside one transaction with IF NOT EXISTS, so
    // several processes creating the same file at once all end up with the same schema.
    Transaction txn(*impl, true);
    if (table_names(*impl).count("metatune_schema") == 0) {
      // Created by nobody else meanwhile: mark the file as ours (SQLite's application id).
      impl->exec("PRAGMA application_id = 1836344686", "marking the file"); // 'mtun'
    }
    impl->exec(kSchema, "creating the schema");
    txn.commit();
    tables = table_names(*impl);
  }
  {
    Statement st(*impl, "SELECT value FROM metatune_schema WHERE key = 'version'");
    if (!st.step("reading the schema version"))
      throw DatabaseError(path + ": metatune database without a schema version");
    int version = std::atoi(st.text(0).c_str());
    if (version > kSchemaVersion)
      throw DatabaseError(path + ": written with database schema version " +
                          std::to_string(version) + ", this metatune reads versions up to " +
                          std::to_string(kSchemaVersion) + " (upgrade metatune)");
    if (version < 1) throw DatabaseError(path + ": bad schema version '" + st.text(0) + "'");
    // Migrations from older versions go here when there are any.
  }
  for (const char* t : kSchemaTables)
    if (!tables.count(t))
      throw DatabaseError(path + ": metatune database without its '" + std::string(t) + "' table");

  if (!options.read_only) {
    // WAL lets readers proceed while one process writes, and a commit is a single append.
    // Switching needs a moment of exclusive access, so retry while others hold the file.
    for (int attempt = 0;; ++attempt) {
      Statement st(*impl, "PRAGMA journal_mode = WAL");
      int rc = sqlite3_step(st.get());
      if (rc == SQLITE_ROW &&
          std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0))) == "wal")
        break;
      if (attempt * 10 > options.busy_timeout_ms) impl->fail("switching to WAL mode");
      sqlite3_sleep(10);
    }
    impl->exec(options.sync_every_commit ? "PRAGMA synchronous = FULL"
                                         : "PRAGMA synchronous = NORMAL",
               "setting the synchronous mode");
  }
  if (!options.read_only) impl->exec(kModelChoicesSchema, "creating the model choices table");
  impl->has_model_choices = table_names(*impl).count("model_choices") > 0;
  impl->exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  return std::unique_ptr<Database>(new Database(std::move(impl)));
}

Database::Database(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Database::~Database() = default;

const std::string& Database::path() const {
  return impl_->path;
}

// ---- workloads ----------------------------------------------------------------------------

int64_t Database::commit_workload(const Function& f, const std::string& spec) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Transaction txn(*impl_, true);
  int64_t id = impl_->commit_workload_in_txn(f, spec, nullptr);
  txn.commit();
  return id;
}

std::optional<WorkloadEntry> Database::find_workload(const Function& f) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  return impl_->find(print(f, PrintOptions{true}), structural_hash(f));
}

std::optional<WorkloadEntry> Database::workload(int64_t id) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, std::string("SELECT ") + kWorkloadColumns + " FROM workloads WHERE id = ?1");
  st.bind(1, id);
  if (!st.step("reading a workload")) return std::nullopt;
  return impl_->read_workload(st);
}

bool Database::has_workload(uint64_t hash) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, "SELECT 1 FROM workloads WHERE hash = ?1");
  st.bind(1, hash_to_hex(hash));
  return st.step("looking up a workload");
}

std::vector<WorkloadEntry> Database::workloads() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, std::string("SELECT ") + kWorkloadColumns + " FROM workloads ORDER BY id");
  std::vector<WorkloadEntry> out;
  while (st.step("listing workloads")) {
    try {
      out.push_back(impl_->read_workload(st));
    } catch (const DatabaseError& e) {
      impl_->note_problem(e.what());
    }
  }
  return out;
}

Function Database::workload_function(int64_t id) const {
  auto w = workload(id);
  if (!w) throw DatabaseError(path() + ": no workload " + std::to_string(id));
  try {
    return parse_function(w->ir_text, path() + " workload " + std::to_string(id));
  } catch (const ParseError& e) {
    throw DatabaseError(path() + ": workload " + std::to_string(id) +
                        ": IR does not parse: " + e.what());
  }
}

// ---- records ------------------------------------------------------------------------------

int64_t Database::commit_record(const TuningRecord& record) {
  std::string trace;
  try {
    validate_for_commit(record);
    trace = normalized_trace(record.trace_json);
  } catch (const std::exception& e) {
    throw DatabaseError(path() + ": cannot commit a record of workload " +
                        std::to_string(record.workload_id) + ": " + e.what());
  }
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (!impl_->workload_exists(record.workload_id))
    throw DatabaseError(path() + ": cannot commit a record of workload " +
                        std::to_string(record.workload_id) + ": no such workload");
  // A single INSERT outside BEGIN is a transaction of its own, committed when it returns.
  return impl_->insert_record(record, trace);
}

TuningRecord Database::append_run_secs(int64_t record_id, const std::vector<double>& run_secs) {
  for (double t : run_secs)
    if (!std::isfinite(t) || t <= 0)
      throw DatabaseError(path() + ": record " + std::to_string(record_id) +
                          ": cannot add the run time " + std::to_string(t) +
                          " (must be finite and positive)");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  // Read and rewrite in one write transaction: another process appending at the same time
  // waits, and neither loses the other's times.
  Transaction txn(*impl_, true);
  TuningRecord r;
  {
    Statement st(*impl_, std::string("SELECT ") + kRecordColumns + " FROM records WHERE id = ?1");
    st.bind(1, record_id);
    if (!st.step("reading a record"))
      throw DatabaseError(path() + ": no record " + std::to_string(record_id));
    r = impl_->read_record(st);
  }
  if (r.failed())
    throw DatabaseError(path() + ": record " + std::to_string(record_id) +
                        " is a failed trial; run times are only added to successful ones");
  r.run_secs.insert(r.run_secs.end(), run_secs.begin(), run_secs.end());
  Statement up(*impl_, "UPDATE records SET run_secs = ?1, mean_secs = ?2 WHERE id = ?3");
  up.bind(1, json(r.run_secs).dump()).bind(2, r.mean_secs()).bind(3, record_id);
  up.step("adding run times to a record");
  txn.commit();
  return r;
}

std::vector<TuningRecord> Database::Impl::query_records(const std::string& where,
                                                        const std::vector<std::string>& text_args,
                                                        int64_t workload_id, size_t limit) const {
  std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records WHERE " + where;
  Statement st(*this, sql);
  st.bind(1, workload_id);
  for (size_t i = 0; i < text_args.size(); ++i)
    st.bind(static_cast<int>(i) + 2, text_args[i]);
  std::vector<TuningRecord> out;
  while (out.size() < limit && st.step("reading records")) {
    try {
      out.push_back(read_record(st));
    } catch (const DatabaseError& e) {
      note_problem(e.what());
    }
  }
  return out;
}

std::vector<TuningRecord> Database::top_k(int64_t workload_id, const std::string& target,
                                          size_t k) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  return impl_->query_records("workload_id = ?1 AND target = ?2 AND mean_secs IS NOT NULL "
                              "ORDER BY mean_secs, id",
                              {target}, workload_id, k);
}

std::vector<TuningRecord> Database::top_k(const Function& workload, const std::string& target,
                                          size_t k) const {
  auto w = find_workload(workload);
  return w ? top_k(w->id, target, k) : std::vector<TuningRecord>{};
}

std::optional<TuningRecord> Database::best(int64_t workload_id, const std::string& target) const {
  auto v = top_k(workload_id, target, 1);
  if (v.empty()) return std::nullopt;
  return std::move(v.front());
}

std::optional<TuningRecord> Database::best(const Function& workload,
                                           const std::string& target) const {
  auto v = top_k(workload, target, 1);
  if (v.empty()) return std::nullopt;
  return std::move(v.front());
}

std::vector<TuningRecord> Database::records(int64_t workload_id, const std::string& target) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (target.empty())
    return impl_->query_records("workload_id = ?1 ORDER BY id", {}, workload_id, SIZE_MAX);
  return impl_->query_records("workload_id = ?1 AND target = ?2 ORDER BY id", {target}, workload_id,
                              SIZE_MAX);
}

size_t Database::record_count(int64_t workload_id, const std::string& target) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, target.empty()
                           ? "SELECT COUNT(*) FROM records WHERE workload_id = ?1"
                           : "SELECT COUNT(*) FROM records WHERE workload_id = ?1 AND target = ?2");
  st.bind(1, workload_id);
  if (!target.empty()) st.bind(2, target);
  st.step("counting records");
  return static_cast<size_t>(st.int64(0));
}

size_t Database::record_count() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, "SELECT COUNT(*) FROM records");
  st.step("counting records");
  return static_cast<size_t>(st.int64(0));
}

std::optional<std::string> Database::setting(const std::string& key) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, "SELECT value FROM metatune_schema WHERE key = ?1");
  st.bind(1, key);
  if (!st.step("reading a setting")) return std::nullopt;
  return st.text(0);
}

void Database::set_setting(const std::string& key, const std::string& value) {
  if (is_schema_key(key))
    throw DatabaseError(path() + ": the setting '" + key + "' is the schema's own");
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, "INSERT OR REPLACE INTO metatune_schema (key, value) VALUES (?1, ?2)");
  st.bind(1, key).bind(2, value);
  st.step("storing a setting");
}

std::optional<std::string> Database::record_setting(const std::string& key) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (std::optional<std::string> stored = setting(key)) return stored;
  if (const RecordSetting* s = record_setting_of(key))
    return record_count() > 0 ? std::optional<std::string>(s->before) : std::nullopt;
  throw DatabaseError(path() + ": '" + key + "' is not a setting of how records were measured");
}

void Database::set_model_choice(const ModelChoice& c) {
  try {
    validate_model_choice(c);
  } catch (const std::invalid_argument& e) {
    throw DatabaseError(path() + ": " + e.what());
  }
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  impl_->store_model_choice(c);
}

void Database::Impl::store_model_choice(const ModelChoice& c) const {
  Statement st(*this, "INSERT OR REPLACE INTO model_choices (workload_id, target, "
                      "implementation, tuned_secs, library_secs, created_at) VALUES "
                      "(?1, ?2, ?3, ?4, ?5, ?6)");
  st.bind(1, c.workload_id).bind(2, c.target).bind(3, c.implementation);
  st.bind(4, c.tuned_seconds).bind(5, c.library_seconds);
  st.bind(6, c.created_at_ms ? c.created_at_ms : now_ms());
  st.step("storing a model choice");
}

std::optional<ModelChoice> Database::model_choice(int64_t workload_id,
                                                  const std::string& target) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  if (!impl_->has_model_choices) return std::nullopt;
  Statement st(*impl_, "SELECT implementation, tuned_secs, library_secs, created_at FROM "
                       "model_choices WHERE workload_id = ?1 AND target = ?2");
  st.bind(1, workload_id).bind(2, target);
  if (!st.step("reading a model choice")) return std::nullopt;
  return ModelChoice{workload_id, target, st.text(0), st.real(1), st.real(2), st.int64(3)};
}

TuningRecord Database::record(int64_t id) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  Statement st(*impl_, std::string("SELECT ") + kRecordColumns + " FROM records WHERE id = ?1");
  st.bind(1, id);
  if (!st.step("reading a record"))
    throw DatabaseError(path() + ": no record " + std::to_string(id));
  return impl_->read_record(st);
}

std::vector<std::string> Database::take_problems() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<std::string> out;
  out.swap(impl_->problems);
  return out;
}

std::vector<std::string> Database::check() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<std::string> out;
  try {
    Statement qc(*impl_, "PRAGMA quick_check");
    while (qc.step("checking integrity")) {
      std::string line = qc.text(0);
      if (line != "ok") out.push_back(path() + ": " + line);
    }
    std::set<int64_t> workload_ids;
    Statement ws(*impl_, std::string("SELECT ") + kWorkloadColumns + " FROM workloads");
    while (ws.step("reading workloads")) {
      try {
        WorkloadEntry w = impl_->read_workload(ws);
        workload_ids.insert(w.id);
        Function f = parse_function(w.ir_text, path() + " workload " + std::to_string(w.id));
        if (structural_hash(f) != w.hash)
          out.push_back(
              path() + ": workload " + std::to_string(w.id) +
              ": stored hash does not match its IR (written by another metatune version?)");
      } catch (const std::exception& e) {
        out.push_back(e.what());
      }
    }
    Statement rs(*impl_, std::string("SELECT ") + kRecordColumns + " FROM records");
    while (rs.step("reading records")) {
      try {
        TuningRecord r = impl_->read_record(rs);
        if (!workload_ids.count(r.workload_id))
          out.push_back(r.source + ": refers to missing workload " + std::to_string(r.workload_id));
      } catch (const std::exception& e) {
        out.push_back(e.what());
      }
    }
  } catch (const DatabaseError& e) {
    out.push_back(e.what());
  }
  return out;
}

// ---- replay -------------------------------------------------------------------------------

Function replay(const TuningRecord& record, const Function& workload) {
  std::string who = record.source.empty() ? "record " + std::to_string(record.id) : record.source;
  Trace trace;
  try {
    trace = Trace::from_json(record.trace_json);
  } catch (const std::exception& e) {
    throw ReplayError(who + ": trace does not parse: " + e.what());
  }
  Schedule sch(workload, record.seed);
  try {
    trace.apply_to(sch, /*use_decisions=*/true);
  } catch (const std::exception& e) {
    throw ReplayError(who + ": trace does not apply to workload '" + workload.name +
                      "': " + e.what());
  }
  return sch.func();
}

} // namespace mt
