// Interleaved comparison of two implementations in one worker process (see
// implementation_compare.h). The worker answers with one line of text on a pipe:
//   "ok <n> <a_1> ... <a_n> <b_1> ... <b_n>"  or  "error <message>"
// and leaves with _exit, so that no destructor of the parent's objects runs in it.
#include "core/tune/implementation_compare.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lower/lower.h"
#include "core/plugin/plugin_components.h"
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
  std::vector<NDArray> args;
  std::vector<bool> is_output = f.output_mask();
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
    if (!is_output[i]) args.back().fill_random(seed * 0x9E3779B97F4A7C15ull + i);
  }
  return args;
}

std::vector<NDArray*> pointers(std::vector<NDArray>& v) {
  std::vector<NDArray*> p;
  for (auto& a : v)
    p.push_back(&a);
  return p;
}

std::string run_comparison(const PluginTarget& ta, const Function& a, const PluginTarget& tb,
                           const Function& b, const CompareOptions& o) {
  std::unique_ptr<PluginModule> ma, mb;
  try {
    ma = ta.build(a.lowered ? a : lower(a));
  } catch (const std::exception& e) {
    return std::string("error building the first implementation: ") + e.what();
  }
  try {
    mb = tb.build(b.lowered ? b : lower(b));
  } catch (const std::exception& e) {
    return std::string("error building the second implementation: ") + e.what();
  }
  std::vector<NDArray> args_a = make_args(a, o.seed), args_b = make_args(b, o.seed);
  std::vector<NDArray*> pa = pointers(args_a), pb = pointers(args_b);
  std::vector<double> sa, sb;
  try {
    ma->run(pa); // warm-up: code paths, caches, the libraries' thread pools
    mb->run(pb);
    for (int i = 0; i < std::max(1, o.repeats); ++i) {
      // A B, then B A: a slow drift of the machine's state favours neither side.
      bool a_first = i % 2 == 0;
      for (int k = 0; k < 2; ++k) {
        if ((k == 0) == a_first)
          sa.push_back(ma->time(pa, 1, o.min_repeat_seconds).at(0));
        else
          sb.push_back(mb->time(pb, 1, o.min_repeat_seconds).at(0));
      }
    }
  } catch (const std::exception& e) {
    return std::string("error running: ") + e.what();
  }
  std::ostringstream os;
  os.precision(17);
  os << "ok " << sa.size();
  for (double s : sa)
    os << ' ' << s;
  for (double s : sb)
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

CompareResult compare_interleaved(const PluginTarget& target_a, const Function& a,
                                  const PluginTarget& target_b, const Function& b,
                                  const CompareOptions& options) {
  CompareResult r;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
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
      answer = run_comparison(target_a, a, target_b, b, options);
    } catch (...) {
      answer = "error: unknown exception";
    }
    write_all(fds[1], answer);
    ::_exit(0);
  }
  ::close(fds[1]);

  std::string text;
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
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
    r.error = "timed out after " + std::to_string(options.timeout_s) + " s";
    return r;
  }
  if (WIFSIGNALED(status) && text.empty()) {
    r.error = std::string("the worker died from signal ") + std::to_string(WTERMSIG(status)) +
              " (" + ::strsignal(WTERMSIG(status)) + ")";
    return r;
  }
  std::istringstream is(text);
  std::string word;
  is >> word;
  if (word != "ok") {
    r.error = text.empty() ? "the worker gave no answer" : text;
    return r;
  }
  size_t n = 0;
  is >> n;
  r.a_secs.resize(n);
  r.b_secs.resize(n);
  for (double& s : r.a_secs)
    is >> s;
  for (double& s : r.b_secs)
    is >> s;
  if (!is || n == 0) {
    r.error = "malformed answer from the worker: " + text;
    return r;
  }
  r.a_median = median_of(r.a_secs);
  r.b_median = median_of(r.b_secs);
  r.ok = true;
  return r;
}

} // namespace mt
