// hip_compiler.cpp: clang as a subprocess turning HIP C++ into an AMD GPU code object (see
// hip_compiler.h): finding clang and the ROCm device libraries, and running one compile in a
// temporary directory with a deadline.
#include "hip_compiler.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <system_error>

namespace mt::rocm {

namespace {

namespace fs = std::filesystem;

// Set with the process-wide compiler, before it is published (call_once orders the two).
std::string g_hip_version;

// clang's log beyond this is dropped: a pathological source can make it print without end.
constexpr size_t kMaxLog = 4 << 20;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool has_device_libs(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / "ocml.bc", ec);
}

bool has_hip_headers(const std::string& rocm_path) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(rocm_path) / "include/hip/hip_runtime.h", ec);
}

// "5.2.21153" from ROCm's version file (HIP_VERSION_MAJOR=5 ...); "" when there is none.
// Debian's clang 15 does not read share/hip/version itself: it then assumes HIP 3.5 and leaves
// out its HIP wrapper header, so the version is passed on as hipcc does.
std::string read_hip_version(const std::string& rocm_path) {
  for (const char* file : {"share/hip/version", "bin/.hipVersion"}) {
    std::ifstream in(fs::path(rocm_path) / file);
    if (!in) continue;
    std::string major, minor, patch, line;
    while (std::getline(in, line)) {
      auto value = [&](const char* key) -> std::string {
        const size_t n = std::strlen(key);
        return line.compare(0, n, key) == 0 ? line.substr(n) : std::string();
      };
      if (auto v = value("HIP_VERSION_MAJOR="); !v.empty()) major = v;
      if (auto v = value("HIP_VERSION_MINOR="); !v.empty()) minor = v;
      if (auto v = value("HIP_VERSION_PATCH="); !v.empty()) patch = v;
    }
    auto numeric = [](const std::string& s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    };
    if (numeric(major) && numeric(minor))
      return major + "." + minor + (numeric(patch) ? "." + patch : std::string());
  }
  return {};
}

// A file name that labels diagnostics and cannot leave the temporary directory.
std::string source_file_name(const std::string& name) {
  std::string out;
  for (unsigned char c : name)
    out += std::isalnum(c) || c == '.' || c == '_' || c == '-' ? static_cast<char>(c) : '_';
  if (out.empty() || out.find_first_not_of('.') == std::string::npos) out = "kernel.hip";
  if (out == "code_object.out") out = "_" + out;
  return out;
}

// "120", "0.5", "0.001": the timeout as the log states it.
std::string seconds_text(std::chrono::milliseconds timeout) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(timeout.count()) / 1000.0);
  std::string s = buf;
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The temporary directory of one compile, removed with everything in it.
class TempDir {
public:
  explicit TempDir(std::string* error) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/metatune-hip-XXXXXX";
    if (::mkdtemp(pattern.data()))
      path_ = pattern;
    else
      *error = "mkdtemp(" + pattern + "): " + std::strerror(errno);
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

struct ProcessResult {
  std::string start_error; // the process never ran: why
  std::string wait_error;  // it ran, but its exit status could not be had: why
  bool timed_out = false;
  int status = 0; // waitpid's
  std::string output;
  bool output_truncated = false;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Runs argv[0] (an absolute path) in `cwd`, with `cwd` as its TMPDIR too, stdout and stderr
// into one pipe, stdin from /dev/null, in a process group of its own so that a timeout also
// kills what it started (the linker). Between fork and exec the child only makes
// async-signal-safe calls: the caller may be one of many threads.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd,
                          std::chrono::milliseconds timeout) {
  ProcessResult result;
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // clang 15 leaves an empty directory ("<name>-xxxxxx") in $TMPDIR after every HIP compile,
  // and a killed one its temporary files: in our directory they go with it.
  const std::string tmpdir = "TMPDIR=" + cwd;
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.push_back(*e);
  env.push_back(const_cast<char*>(tmpdir.c_str()));
  env.push_back(nullptr);

  // Close-on-exec for both pipes: a compiler exec'ed meanwhile by another thread must not hold
  // our write end (its EOF would wait for that compiler), and ours must not keep the read end.
  int out[2] = {-1, -1};
  int exec_error[2] = {-1, -1}; // the child's errno when exec (or its set-up) fails
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(exec_error, O_CLOEXEC) != 0) {
    result.start_error = std::string("pipe2: ") + std::strerror(errno);
    close_fd(out[0]);
    close_fd(out[1]);
    return result;
  }

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pid_t pid = ::fork();
  if (pid < 0) {
    result.start_error = std::string("fork: ") + std::strerror(errno);
    for (int* fd : {&out[0], &out[1], &exec_error[0], &exec_error[1]})
      close_fd(*fd);
    return result;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in >= 0) ::dup2(in, 0);
    // dup2 clears close-on-exec on the copies only.
    if (::dup2(out[1], 1) >= 0 && ::dup2(out[1], 2) >= 0 && ::chdir(cwd.c_str()) == 0)
      ::execve(args[0], args.data(), env.data());
    int e = errno;
    ssize_t ignored = ::write(exec_error[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also here: whichever runs first, the group exists before any kill
  close_fd(out[1]);
  close_fd(exec_error[1]);

  // EOF at exec (close-on-exec) or the errno of a failed one; exec is quick either way.
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_error[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(exec_error[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    result.start_error = "execve(" + argv[0] + "): " + std::strerror(child_errno);
    close_fd(out[0]);
    while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
    }
    return result;
  }

  auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
        .count();
  };
  bool eof = false, lost = false;
  while (!eof) {
    long long left = left_ms();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { // cannot watch it any longer: it is stopped, as if hung
      result.wait_error = std::string("poll: ") + std::strerror(errno);
      lost = true;
      break;
    }
    if (r == 0) continue;
    char buf[8192];
    ssize_t got = ::read(out[0], buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      eof = true;
      break;
    }
    if (result.output.size() < kMaxLog)
      result.output.append(buf, std::min(static_cast<size_t>(got), kMaxLog - result.output.size()));
    else
      result.output_truncated = true;
  }
  close_fd(out[0]);

  // Its output closed, the compiler is normally gone already; it still gets only the deadline.
  if (!result.timed_out && !lost) {
    for (int sleep_us = 200;;) {
      pid_t w = ::waitpid(pid, &result.status, WNOHANG);
      if (w == pid) return result;
      if (w < 0 && errno != EINTR) {
        result.wait_error = std::string("waitpid: ") + std::strerror(errno);
        return result;
      }
      if (left_ms() <= 0) {
        result.timed_out = true;
        break;
      }
      ::usleep(sleep_us);
      sleep_us = std::min(sleep_us * 2, 10'000);
    }
  }
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  // A process stuck in the kernel may not die at once: do not hang on it for ever.
  for (int i = 0; i < 500; ++i) {
    pid_t w = ::waitpid(pid, &result.status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    ::usleep(10'000);
  }
  return result;
}

bool is_elf(const std::vector<char>& data) {
  return data.size() >= 4 && data[0] == 0x7f && data[1] == 'E' && data[2] == 'L' && data[3] == 'F';
}

} // namespace

const HipCompiler* HipCompiler::get(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<HipCompiler> instance;
  static std::string reason;
  std::call_once(once, [] {
    std::string clang;
    if (const char* env = std::getenv("METATUNE_HIP_CLANG"); env && *env) {
      if (!is_executable_file(env)) {
        reason = std::string("no HIP compiler ($METATUNE_HIP_CLANG=") + env +
                 " is not an executable file)";
        return;
      }
      clang = env;
    } else {
      for (const char* c :
           {"/opt/rocm/llvm/bin/clang++", "/usr/lib/llvm-15/bin/clang++", "/usr/bin/clang++-15"})
        if (is_executable_file(c)) {
          clang = c;
          break;
        }
      if (clang.empty()) {
        reason = "no HIP compiler (no clang at /opt/rocm/llvm/bin/clang++, "
                 "/usr/lib/llvm-15/bin/clang++ or /usr/bin/clang++-15; set $METATUNE_HIP_CLANG)";
        return;
      }
    }

    std::string libs;
    if (const char* env = std::getenv("METATUNE_ROCM_DEVICE_LIBS"); env && *env) {
      if (!has_device_libs(env)) {
        reason = std::string("no ROCm device libraries ($METATUNE_ROCM_DEVICE_LIBS=") + env +
                 " has no ocml.bc)";
        return;
      }
      libs = env;
    } else {
      for (const char* d : {"/opt/rocm/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
                            "/usr/lib/amdgcn/bitcode"})
        if (has_device_libs(d)) {
          libs = d;
          break;
        }
      if (libs.empty()) {
        reason = "no ROCm device libraries (no ocml.bc in /opt/rocm/amdgcn/bitcode, "
                 "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode or /usr/lib/amdgcn/bitcode; set "
                 "$METATUNE_ROCM_DEVICE_LIBS)";
        return;
      }
    }

    // ROCm's own clang goes with ROCm's headers, a distribution's clang with the distribution's.
    const bool rocm_clang = clang.rfind("/opt/rocm", 0) == 0;
    std::string rocm_path;
    for (const char* p : rocm_clang ? std::vector<const char*>{"/opt/rocm", "/usr"}
                                    : std::vector<const char*>{"/usr", "/opt/rocm"})
      if (has_hip_headers(p)) {
        rocm_path = p;
        break;
      }
    if (rocm_path.empty()) {
      reason = "no HIP headers (no include/hip/hip_runtime.h under /usr or /opt/rocm)";
      return;
    }
    g_hip_version = read_hip_version(rocm_path);
    instance.reset(new HipCompiler(clang, libs, rocm_path));
  });
  if (!instance && why) *why = reason;
  return instance.get();
}

bool HipCompiler::log_is_clean(const std::string& log) {
  return std::all_of(log.begin(), log.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

HipCompileResult HipCompiler::compile(const std::string& source, const std::string& name,
                                      const std::string& arch,
                                      const std::vector<std::string>& extra,
                                      std::chrono::milliseconds timeout) const {
  HipCompileResult result;
  auto fail = [&](const std::string& reason) {
    result.ok = false;
    result.code_object.clear();
    if (!result.log.empty() && result.log.back() != '\n') result.log += '\n';
    result.log += reason;
    return result;
  };
  if (arch.empty()) return fail("HipCompiler::compile: no target arch given");

  std::string error;
  TempDir dir(&error);
  if (dir.path().empty()) return fail("HipCompiler::compile: " + error);
  const std::string file = source_file_name(name);
  const std::string output = "code_object.out";
  {
    std::ofstream out(fs::path(dir.path()) / file, std::ios::binary);
    out.write(source.data(), static_cast<std::streamsize>(source.size()));
    out.close();
    if (!out)
      return fail("HipCompiler::compile: cannot write " + dir.path() + "/" + file + ": " +
                  std::strerror(errno));
  }

  // The HIP runtime header is included here rather than by the source: clang 15 adds at most
  // its own __clang_hip_runtime_wrapper.h, which declares no threadIdx or __syncthreads, and
  // generated kernels are written, like CUDA C++, without an #include. Its include guard makes
  // a source's own #include harmless.
  std::vector<std::string> argv = {clang_,
                                   "-x",
                                   "hip",
                                   "--cuda-device-only",
                                   "--offload-arch=" + arch,
                                   "--no-gpu-bundle-output",
                                   "-O3",
                                   "--rocm-path=" + rocm_path_,
                                   "--rocm-device-lib-path=" + device_libs_};
  if (!g_hip_version.empty()) argv.push_back("--hip-version=" + g_hip_version);
  argv.insert(argv.end(), {"-include", "hip/hip_runtime.h"});
  argv.insert(argv.end(), extra.begin(), extra.end()); // after the defaults, so they win
  argv.insert(argv.end(), {"-c", file, "-o", output});

  ProcessResult p = run_process(argv, dir.path(), timeout);
  result.log = std::move(p.output);
  if (p.output_truncated) result.log += "\n[... clang's output truncated]\n";
  if (!p.start_error.empty()) return fail("clang did not run: " + p.start_error);
  if (!p.wait_error.empty()) return fail("clang's exit status is unknown: " + p.wait_error);
  if (p.timed_out)
    return fail("clang did not finish within " + seconds_text(timeout) + " s (killed)");
  if (WIFSIGNALED(p.status))
    return fail("clang died of signal " + std::to_string(WTERMSIG(p.status)) + " (" +
                ::strsignal(WTERMSIG(p.status)) + ")");
  if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0)
    return fail("clang exited with status " + std::to_string(WEXITSTATUS(p.status)) + " for " +
                arch);

  std::ifstream in(fs::path(dir.path()) / output, std::ios::binary);
  if (!in) return fail("clang exited with status 0 but wrote no code object (" + output + ")");
  result.code_object.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!is_elf(result.code_object))
    return fail("clang's output (" + std::to_string(result.code_object.size()) +
                " bytes) is not an ELF code object; do the extra options change the output?");
  result.ok = true;
  return result;
}

} // namespace mt::rocm
