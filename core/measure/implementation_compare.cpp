// Interleaved comparison of two implementations in one worker process (see
// implementation_compare.h). The worker answers with one line of text on a pipe:
//   "ok <n> <a_1> ... <a_n> <b_1> ... <b_n>"  or  "error <message>"
// and leaves with _exit, so that no destructor of the parent's objects runs in it.
#include "core/measure/implementation_compare.h"

#include "core/measure/cold_inputs.h"
#include "core/measure/packed_weights.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lower/lower.h"
#include "core/plugin/plugin_components.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"

namespace mt {

namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Inputs random (deterministic in the seed), outputs zero.
std::vector<NDArray> make_args(const Function& f, uint64_t seed) {
  return make_arguments(f, {.seed = seed, .poison_outputs = false});
}

// In the worker: builds one implementation, runs it once (warm-up: code paths, caches, thread
// pools) and times it. Answers "ok N s1 ... sN" or an error text.
std::string time_one(const PluginTarget& target, const Function& f, int repeats,
                     const CompareOptions& o, ColdInputs* cold) {
  std::unique_ptr<PluginModule> m;
  try {
    m = target.build(f.lowered ? f : lower(f));
  } catch (const std::exception& e) {
    return std::string("error building: ") + e.what();
  }
  std::vector<NDArray> args = make_args(f, o.seed);
  std::vector<NDArray*> p = pointers(args);
  std::vector<double> secs;
  try {
    // The weights packed, as the measurer times them (cold inputs: as given).
    const PackedWeights packed(*m, cold ? std::vector<bool>{} : o.weights, args, p);
    packed.run(*m, p);
    for (int i = 0; i < repeats; ++i)
      secs.push_back(cold ? cold->time(*m, args, 1, o.min_repeat_seconds).at(0)
                          : packed.time(*m, p, 1, o.min_repeat_seconds).at(0));
  } catch (const std::exception& e) {
    return std::string("error running: ") + e.what();
  }
  std::ostringstream os;
  os.precision(17);
  os << "ok " << secs.size();
  for (double s : secs)
    os << ' ' << s;
  return os.str();
}

} // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

// Runs `job` in a forked worker and returns its answer; on a timeout or a death by signal
// returns "" with *error set.
std::string run_in_worker(const std::function<std::string()>& job, double timeout_s,
                          std::string* error) {
  int fds[2];
  if (::pipe(fds) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return {};
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    rlimit no_core{};
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT, SIGINT, SIGTERM})
      ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    std::string answer;
    try {
      answer = job();
    } catch (...) {
      answer = "error: unknown exception";
    }
    write_all(fds[1], answer);
    ::_exit(0);
  }
  ::close(fds[1]);

  std::string text;
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  for (;;) {
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    char buf[4096];
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break; // EOF: the worker is done (or died)
    text.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    *error = "timed out after " + std::to_string(timeout_s) + " s";
    return {};
  }
  if (WIFSIGNALED(status) && text.empty()) {
    *error = std::string("the worker died from signal ") + std::to_string(WTERMSIG(status)) + " (" +
             ::strsignal(WTERMSIG(status)) + ")";
    return {};
  }
  return text;
}

// Parses "ok N s1 ... sN" into *secs; false (with *error) otherwise.
bool parse_times(const std::string& text, std::vector<double>* secs, std::string* error) {
  std::istringstream is(text);
  std::string word;
  is >> word;
  if (word != "ok") {
    *error = text.empty() ? "the worker gave no answer" : text;
    return false;
  }
  size_t n = 0;
  is >> n;
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    is >> s;
    secs->push_back(s);
  }
  if (!is || n == 0) {
    *error = "malformed answer from the worker: " + text;
    return false;
  }
  return true;
}

} // namespace

CompareResult compare_interleaved(const PluginTarget& target_a, const Function& a,
                                  const PluginTarget& target_b, const Function& b,
                                  const CompareOptions& options) {
  CompareResult r;
  const Clock::time_point start = Clock::now();
  const int rounds = std::max(1, options.repeats);
  // Made here, before the workers fork: each inherits the copies instead of making them.
  std::unique_ptr<ColdInputs> cold;
  if (options.cold_inputs)
    cold = std::make_unique<ColdInputs>(make_args(a, options.seed), a.output_mask(),
                                        options.cold_inputs_bytes);
  for (int i = 0; i < rounds; ++i) {
    // A B, then B A: a slow drift of the machine's state favours neither side.
    for (int k = 0; k < 2; ++k) {
      bool do_a = (k == 0) == (i % 2 == 0);
      double left = options.timeout_s - std::chrono::duration<double>(Clock::now() - start).count();
      if (left <= 0) {
        r.error = "timed out after " + std::to_string(options.timeout_s) + " s";
        return r;
      }
      std::string error;
      std::string text = run_in_worker(
          [&] {
            return do_a ? time_one(target_a, a, 1, options, cold.get())
                        : time_one(target_b, b, 1, options, cold.get());
          },
          left, &error);
      if (!error.empty() || !parse_times(text, do_a ? &r.a_secs : &r.b_secs, &error)) {
        r.error = std::string(do_a ? "first" : "second") + " implementation: " + error;
        return r;
      }
    }
  }
  r.a_median = median_of(r.a_secs);
  r.b_median = median_of(r.b_secs);
  r.ok = true;
  return r;
}

} // namespace mt
