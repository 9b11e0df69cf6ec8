#include "util/subprocess.hpp"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/fs.hpp"

extern char** environ;

namespace envfix::util {

namespace {
std::vector<std::string> build_env(const SubprocessOptions& o) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& k : o.unset_env) env.erase(k);
  for (const auto& [k, v] : o.set_env) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}
// Keeps the head and the tail of a stream within `cap` bytes (SubprocessOptions::max_output).
class Capture {
public:
  explicit Capture(std::size_t cap) : m_half(std::max<std::size_t>(cap / 2, 1)) {}
  void add(const char* p, std::size_t n) {
    std::size_t to_head = std::min(n, m_half - std::min(m_half, m_head.size()));
    m_head.append(p, to_head);
    p += to_head;
    n -= to_head;
    if (n == 0) return;
    m_tail.append(p, n);
    if (m_tail.size() > 2 * m_half) { // amortized: trim only when twice the budget
      m_dropped += m_tail.size() - m_half;
      m_tail.erase(0, m_tail.size() - m_half);
    }
  }
  // The text kept, with a line saying how much was left out; the count in `dropped`.
  std::string take(std::uint64_t& dropped) {
    if (m_tail.size() > m_half) {
      m_dropped += m_tail.size() - m_half;
      m_tail.erase(0, m_tail.size() - m_half);
    }
    dropped = m_dropped;
    if (m_dropped == 0) return std::move(m_head) + m_tail;
    return fmt::format("{}\n[... {} bytes of output dropped ...]\n{}", m_head, m_dropped, m_tail);
  }

private:
  std::size_t m_half;
  std::string m_head, m_tail;
  std::uint64_t m_dropped = 0;
};

} // namespace

std::optional<std::filesystem::path> find_in_path(const std::string& name, const char* path_value) {
  if (name.find('/') != std::string::npos) return std::filesystem::path(name);
  const char* p = path_value ? path_value : std::getenv("PATH");
  if (!p) return std::nullopt;
  std::string_view rest(p);
  while (true) {
    auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::filesystem::path cand = std::filesystem::path(dir) / name;
    if (::access(cand.c_str(), X_OK) == 0 && !std::filesystem::is_directory(cand)) return cand;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

Expected<SubprocessResult> run_process(const std::vector<std::string>& argv, const SubprocessOptions& o) {
  if (argv.empty()) return make_error(ErrorCode::internal, "run_process: empty argv");
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0)
    return fail_errno(errno, ErrorCode::io, "cannot create pipes: {}", std::strerror(errno));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]), err_r(err_pipe[0]), err_w(err_pipe[1]), in_r(in_pipe[0]), in_w(in_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, o.merge_stderr ? out_w.get() : err_w.get(), 2);
  if (o.cwd) posix_spawn_file_actions_addchdir_np(&fa, o.cwd->c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so a timeout kills the child's children too.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all);

  std::vector<std::string> env = build_env(o);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    return with_errno(make_error(ErrorCode::subprocess, fmt::format("cannot start {}: {}", argv[0], std::strerror(rc))), rc);
  in_r = Fd();
  out_w = Fd();
  err_w = Fd();

  SubprocessResult res;
  Capture out_cap(o.max_output), err_cap(o.max_output);
  std::string_view to_write = o.stdin_data ? std::string_view(*o.stdin_data) : std::string_view();
  if (to_write.empty()) in_w = Fd();
  else ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  auto deadline = std::chrono::steady_clock::now() + o.timeout;
  ::signal(SIGPIPE, SIG_IGN);
  while (out_r.valid() || err_r.valid()) {
    pollfd fds[3];
    int n = 0;
    if (out_r.valid()) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.valid()) fds[n++] = {err_r.get(), POLLIN, 0};
    if (in_w.valid()) fds[n++] = {in_w.get(), POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      res.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    if (o.cancel && o.cancel()) {
      res.cancelled = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    int pr = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::min<long long>(left.count(), o.cancel ? 100 : 1000)));
    if (pr < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (in_w.valid() && fds[i].fd == in_w.get()) {
        ssize_t w = ::write(in_w.get(), to_write.data(), to_write.size());
        if (w > 0) to_write.remove_prefix(static_cast<std::size_t>(w));
        if (w < 0 && errno != EAGAIN) to_write = {};
        if (to_write.empty()) in_w = Fd();
        continue;
      }
      char buf[65536];
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      bool is_out = out_r.valid() && fds[i].fd == out_r.get();
      if (r > 0) (is_out ? out_cap : err_cap).add(buf, static_cast<std::size_t>(r));
      else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) (is_out ? out_r : err_r) = Fd();
    }
  }
  int status = 0;
  (void)retry_eintr([&] { return ::waitpid(pid, &status, 0); });
  res.out = out_cap.take(res.out_dropped);
  res.err = err_cap.take(res.err_dropped);
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.term_signal = WTERMSIG(status);
  return res;
}

} // namespace envfix::util
