// The measurer (see measure.h). Isolation is fork() without exec: a worker inherits the loaded
// plugins, the target instance and the candidate, so nothing has to be serialised on the way
// in. Each worker talks to the parent over a socket pair (send with MSG_NOSIGNAL, so that a
// worker that died never raises SIGPIPE in the parent):
//   worker: lower + build; sends "built" (or a BuildError result) and waits;
//   parent: sends "go" to one built worker at a time, while no other worker builds;
//   worker: warm-up, check, timed repeats; sends the result and _exits.
// A worker that dies without an answer is diagnosed from its wait status.
#include "core/measure/measure.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/measure/measure_worker.h"
#include "core/plugin/host_api.h"
#include "core/plugin/plugin_components.h"
#include "core/plugin/plugin_messages.h"

namespace mt {

using namespace measure_detail;

const char* to_string(MeasureStatus s) {
  switch (s) {
  case MeasureStatus::Ok:
    return "Ok";
  case MeasureStatus::BuildError:
    return "BuildError";
  case MeasureStatus::BuildTimeout:
    return "BuildTimeout";
  case MeasureStatus::RunError:
    return "RunError";
  case MeasureStatus::Crashed:
    return "Crashed";
  case MeasureStatus::RunTimeout:
    return "RunTimeout";
  case MeasureStatus::WrongResult:
    return "WrongResult";
  case MeasureStatus::Unsupported:
    return "Unsupported";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ---- worker processes ----------------------------------------------------------------------

bool send_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The worker side. Touches nothing the parent owns beyond reading (no terminal, no database;
// plugin log messages are sent to the parent):
// it builds, answers on `fd` and leaves with _exit so that no destructor or atexit handler of
// the parent's objects runs twice.
[[noreturn]] void worker_main(int fd, pid_t parent, const PluginTarget& target,
                              const Function& candidate, const Reference& ref,
                              const MeasureOptions& options, ColdInputs* cold) {
  try {
    // Die with the parent rather than linger as an orphan holding a core busy.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    // A crashing kernel is expected here: no core files, and the default action for the
    // fault signals whatever handlers the parent installed.
    rlimit no_core{};
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT, SIGTRAP, SIGINT, SIGTERM})
      ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // What plugins log here goes to the parent, which owns the terminal.
    set_plugin_log_sink(
        [fd](int level, std::string_view message) { send_all(fd, encode_log(level, message)); });

    Built b = build_candidate(target, candidate, cold ? std::vector<bool>{} : options.weights);
    if (!b.module) {
      send_all(fd, encode_result(build_failure(b)));
      ::_exit(0);
    }
    if (!send_all(fd, encode_built(b.seconds))) ::_exit(0);
    char c = 0;
    ssize_t n;
    do {
      n = ::read(fd, &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1 || c != kGo) ::_exit(0); // the parent gave up on this candidate
    MeasureResult r = run_candidate(*b.module, ref, options, cold);
    r.build_seconds = b.seconds;
    send_all(fd, encode_result(r));
    ::_exit(0);
  } catch (...) {
    ::_exit(3);
  }
}

enum class Phase { Building, Built, Running };

struct Worker {
  size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  Phase phase = Phase::Building;
  Clock::time_point started; // of the current phase (build: the fork; run: the "go")
  double build_seconds = 0;
  std::string inbox;
  bool eof = false;
};

// One measure() call over forked workers.
class IsolatedRun {
public:
  IsolatedRun(const PluginTarget& target, const MeasureOptions& options, const Reference& ref,
              ColdInputs* cold, const std::vector<Function>& candidates,
              const std::function<void(size_t, const MeasureResult&)>& on_result)
      : target_(target), options_(options), ref_(ref), cold_(cold), candidates_(candidates),
        on_result_(on_result), results_(candidates.size()), done_(candidates.size(), false) {
    parallel_ = options.parallel_builds > 0
                    ? options.parallel_builds
                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }

  ~IsolatedRun() {
    // Only reached with live workers when something threw: leave no process behind.
    for (auto& w : live_) {
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, nullptr, 0);
      ::close(w.fd);
    }
  }

  // Builds run up to `parallel_` at once and keep going while built workers wait, up to
  // 2 * parallel_ processes (memory stays bounded); then, with no build running, the built
  // workers are measured one by one until none is left, and building resumes.
  std::vector<MeasureResult> run() {
    size_t next = 0, finished = 0;
    const size_t width = static_cast<size_t>(parallel_);
    bool draining = false;
    while (finished < candidates_.size()) {
      bool measuring = std::any_of(live_.begin(), live_.end(),
                                   [](const Worker& w) { return w.phase == Phase::Running; });
      if (!measuring) {
        size_t building = count(Phase::Building), built = count(Phase::Built);
        if (!draining && building == 0 && built > 0 &&
            (next == candidates_.size() || built >= 2 * width))
          draining = true;
        if (draining && built == 0) draining = false;
        if (draining) {
          start_measurement();
        } else {
          while (next < candidates_.size() && building < width && building + built < 2 * width) {
            spawn(next++);
            ++building;
          }
        }
      }
      wait_for_events();
      finished = static_cast<size_t>(std::count(done_.begin(), done_.end(), true));
    }
    return std::move(results_);
  }

private:
  size_t count(Phase p) const {
    return static_cast<size_t>(
        std::count_if(live_.begin(), live_.end(), [&](const Worker& w) { return w.phase == p; }));
  }

  void finish(size_t index, MeasureResult r) {
    results_[index] = std::move(r);
    done_[index] = true;
    if (on_result_) on_result_(index, results_[index]);
  }

  void spawn(size_t index) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      finish(index, {MeasureStatus::BuildError,
                     std::string("socketpair failed: ") + std::strerror(errno),
                     {},
                     0});
      return;
    }
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      finish(index,
             {MeasureStatus::BuildError, std::string("fork failed: ") + std::strerror(err), {}, 0});
      return;
    }
    if (pid == 0) {
      ::close(sv[0]);
      // Another worker's socket held open here would hide that worker's death from the parent.
      for (const auto& w : live_)
        ::close(w.fd);
      worker_main(sv[1], parent, target_, candidates_[index], ref_, options_, cold_);
    }
    ::close(sv[1]);
    ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    Worker w;
    w.index = index;
    w.pid = pid;
    w.fd = sv[0];
    w.started = Clock::now();
    live_.push_back(std::move(w));
  }

  void start_measurement() {
    auto it = std::min_element(live_.begin(), live_.end(), [](const Worker& a, const Worker& b) {
      // Built workers first, lowest candidate index first.
      return std::make_pair(a.phase != Phase::Built, a.index) <
             std::make_pair(b.phase != Phase::Built, b.index);
    });
    it->phase = Phase::Running;
    it->started = Clock::now();
    // A worker that is gone fails this send; its death is noticed by the wait below.
    send_all(it->fd, std::string(1, kGo));
  }

  double deadline_left(const Worker& w, Clock::time_point now) const {
    if (w.phase == Phase::Built) return INFINITY;
    double limit = w.phase == Phase::Building ? options_.build_timeout_s : options_.run_timeout_s;
    return limit - seconds_between(w.started, now);
  }

  void wait_for_events() {
    auto now = Clock::now();
    // The wake-up every 100 ms also catches a worker whose death left no EOF behind (its
    // socket inherited by a process this measurer does not know about).
    double wait_s = 0.1;
    for (const auto& w : live_)
      wait_s = std::min(wait_s, std::max(0.0, deadline_left(w, now)));
    std::vector<pollfd> fds;
    for (const auto& w : live_)
      fds.push_back({w.fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::ceil(wait_s * 1000)));
    if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
    for (size_t i = 0; i < fds.size(); ++i)
      if (n > 0 && fds[i].revents != 0) drain(live_[i]);

    now = Clock::now();
    for (size_t i = 0; i < live_.size();) {
      if (check(live_[i], now)) {
        ::close(live_[i].fd);
        live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  void drain(Worker& w) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(w.fd, buf, sizeof buf);
      if (n > 0) {
        w.inbox.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) w.eof = true;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) w.eof = true;
      return;
    }
  }

  // Consumes the frames received so far; the result, if one came.
  std::optional<MeasureResult> take_answer(Worker& w) {
    while (auto frame = take_frame(w.inbox)) {
      if (frame->first == kTagBuilt && w.phase == Phase::Building) {
        w.build_seconds = decode_built(frame->second);
        w.phase = Phase::Built;
      } else if (frame->first == kTagLog) {
        try {
          auto [level, message] = decode_log(frame->second);
          log_plugin_message(level, message);
        } catch (const std::exception&) { // a garbled message is not worth the measurement
        }
      } else if (frame->first == kTagResult) {
        try {
          return decode_result(frame->second);
        } catch (const std::exception& e) {
          return MeasureResult{MeasureStatus::RunError, e.what(), {}, w.build_seconds};
        }
      }
    }
    return std::nullopt;
  }

  // Handles what `w` said or did; true when its candidate is finished (worker reaped).
  bool check(Worker& w, Clock::time_point now) {
    // Every outcome carries the wall time of the candidate's turn to run, if it had one.
    const double run_wall = w.phase == Phase::Running ? seconds_between(w.started, now) : 0;
    auto settle = [&](MeasureResult r) {
      r.run_wall_seconds = run_wall;
      finish(w.index, std::move(r));
    };
    if (auto answer = take_answer(w)) {
      ::waitpid(w.pid, nullptr, 0); // it _exits right after answering
      settle(std::move(*answer));
      return true;
    }
    int status = 0;
    pid_t got = ::waitpid(w.pid, &status, w.eof ? 0 : WNOHANG);
    if (got == w.pid || (got < 0 && errno == ECHILD)) {
      drain(w); // an answer written just before the exit
      auto answer = take_answer(w);
      settle(answer ? std::move(*answer) : died(w, got == w.pid ? status : -1));
      return true;
    }
    if (deadline_left(w, now) <= 0) {
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, nullptr, 0);
      MeasureResult r;
      if (w.phase == Phase::Building) {
        r.status = MeasureStatus::BuildTimeout;
        r.error = "build took longer than " + seconds_text(options_.build_timeout_s);
        r.build_seconds = seconds_between(w.started, now);
      } else {
        r.status = MeasureStatus::RunTimeout;
        r.error = "run took longer than " + seconds_text(options_.run_timeout_s);
        r.build_seconds = w.build_seconds;
      }
      settle(std::move(r));
      return true;
    }
    return false;
  }

  MeasureResult died(const Worker& w, int status) const {
    MeasureResult r;
    r.build_seconds = w.build_seconds;
    const char* when = w.phase == Phase::Building ? " while building" : "";
    if (status >= 0 && WIFSIGNALED(status)) {
      r.status = MeasureStatus::Crashed;
      r.error = "crashed with " + signal_name(WTERMSIG(status)) + when;
    } else {
      r.status = w.phase == Phase::Building ? MeasureStatus::BuildError : MeasureStatus::RunError;
      r.error = status >= 0 ? "worker exited with code " + std::to_string(WEXITSTATUS(status)) +
                                  " without an answer"
                            : "worker vanished without an answer";
    }
    return r;
  }

  static std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", s);
    return buf;
  }

  const PluginTarget& target_;
  const MeasureOptions& options_;
  const Reference& ref_;
  ColdInputs* cold_; // made before the workers fork; they inherit it
  const std::vector<Function>& candidates_;
  const std::function<void(size_t, const MeasureResult&)>& on_result_;
  int parallel_ = 1;
  std::vector<Worker> live_;
  std::vector<MeasureResult> results_;
  std::vector<bool> done_;
};

} // namespace

// ---- Measurer ------------------------------------------------------------------------------

struct Measurer::Impl {
  const PluginTarget& target;
  MeasureOptions options;
};

Measurer::Measurer(const PluginTarget& target, MeasureOptions options)
    : impl_(std::make_unique<Impl>(Impl{target, options})) {}

Measurer::~Measurer() = default;

const MeasureOptions& Measurer::options() const {
  return impl_->options;
}

void Measurer::set_weights(std::vector<bool> weights) {
  impl_->options.weights = std::move(weights);
}

void Measurer::set_cold_inputs(bool cold) {
  impl_->options.cold_inputs = cold;
}

std::vector<MeasureResult>
Measurer::measure(const Reference& ref, const std::vector<Function>& candidates,
                  const std::function<void(size_t, const MeasureResult&)>& on_result) {
  if (ref.args.size() != ref.is_output.size())
    throw std::invalid_argument("Measurer::measure: the reference has " +
                                std::to_string(ref.args.size()) + " arguments but " +
                                std::to_string(ref.is_output.size()) + " output flags");
  std::shared_ptr<ColdInputs> cold;
  if (impl_->options.cold_inputs) cold = cold_inputs_for(ref, impl_->options.cold_inputs_bytes);
  if (impl_->options.isolate)
    return IsolatedRun(impl_->target, impl_->options, ref, cold.get(), candidates, on_result).run();

  std::vector<MeasureResult> results;
  for (size_t i = 0; i < candidates.size(); ++i) {
    Built b = build_candidate(impl_->target, candidates[i]);
    MeasureResult r;
    if (!b.module) {
      r = build_failure(b);
    } else {
      auto started = Clock::now();
      r = run_candidate(*b.module, ref, impl_->options, cold.get());
      r.run_wall_seconds = seconds_between(started, Clock::now());
    }
    r.build_seconds = b.seconds;
    results.push_back(std::move(r));
    if (on_result) on_result(i, results.back());
  }
  return results;
}

MeasureOptions with_bf16_products_tolerance(MeasureOptions m) {
  if (m.tolerance_given) return m;
  m.rtol = std::max(m.rtol, 1.0 / 64);
  m.atol_of_largest = std::max(m.atol_of_largest, 1.0 / 128);
  return m;
}

} // namespace mt
