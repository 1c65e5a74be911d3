// Asking a forked child, for vendor plugins whose driver does not survive fork() (CUDA, ROCm,
// PoCL's worker threads). The host forks its measurement workers without exec, so the parent
// process must never initialise such a driver; what it needs from the driver (a device
// description) it asks a short-lived child that initialises it, answers, and exits.
// Header-only, POSIX.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

namespace mt::sdk {

namespace child_detail {

inline bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The child's whole life: no return, no exception out, and _exit, so that none of the parent's
// atexit handlers, static destructors or buffered output run twice.
[[noreturn]] inline void child_main(int fd, const std::function<std::string()>& work) {
  ::signal(SIGPIPE, SIG_IGN); // a parent that gave up must not turn this into a crash
  std::string reply;
  try {
    reply = "A" + work();
  } catch (const std::exception& e) {
    reply = std::string("E") + e.what();
  } catch (...) {
    reply = "Eunknown exception";
  }
  bool sent = write_all(fd, reply);
  ::close(fd);
  ::_exit(sent ? 0 : 1);
}

} // namespace child_detail

// Forks; the child runs `work` and sends back what it returns, or the message of what it
// throws. The parent waits at most `timeout` (then kills the child). Returns the answer, or
// nullopt with *why set to the child's exception message, its death by a signal, or the
// timeout.
inline std::optional<std::string> ask_forked_child(const std::function<std::string()>& work,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* why) {
  std::string ignored;
  if (!why) why = &ignored;
  int fds[2];
  // Close-on-exec: processes exec'ed meanwhile must not hold the write end open.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *why = std::string("pipe2: ") + std::strerror(errno);
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    *why = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_detail::child_main(fds[1], work);
  }
  ::close(fds[1]);

  std::string data;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      timed_out = true; // no answer either way: the child is killed below
      break;
    }
    if (r == 0) continue;
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; // EOF: the child is done
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (timed_out) {
    ::kill(pid, SIGKILL);
    // A child stuck inside a kernel driver may not die at once: do not hang on it for ever.
    for (int i = 0; i < 500 && ::waitpid(pid, &status, WNOHANG) == 0; ++i)
      ::usleep(10'000);
    *why = "the child did not answer within " + std::to_string(timeout.count()) + " ms (killed)";
    return std::nullopt;
  }
  pid_t w;
  do {
    w = ::waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  if (w == pid && WIFSIGNALED(status)) {
    *why = "the child died of signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
    return std::nullopt;
  }
  if (data.empty() || (data[0] != 'A' && data[0] != 'E')) {
    *why = "the child exited" +
           (w == pid && WIFEXITED(status) ? " with status " + std::to_string(WEXITSTATUS(status))
                                          : std::string()) +
           " without an answer";
    return std::nullopt;
  }
  if (data[0] == 'E') {
    *why = data.substr(1);
    return std::nullopt;
  }
  return data.substr(1);
}

} // namespace mt::sdk
