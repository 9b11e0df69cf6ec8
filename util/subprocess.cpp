#include "util/subprocess.hpp"

#include <cerrno>
#include <cstdlib>
#include <csignal>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <sstream>

#include "util/fs.hpp"
#include "util/url.hpp"

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
  if (o.drop_index_credentials) drop_index_credentials(env);
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

// The children envfix spawned and has not reaped yet: every other process whose parent is envfix
// was adopted (PR_SET_CHILD_SUBREAPER, below).
std::mutex g_children_mu;
std::set<pid_t> g_children;

// A new_session child's descendants that leave its session (setsid) or double-fork are reparented
// to envfix rather than to init, so that envfix finds them when the child ends (issue 60, 6).
void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
}

struct ProcStat {
  long pid = 0, ppid = 0, session = 0;
  char state = 0;
};
// /proc/<pid>/stat ("pid (comm) state ppid pgrp session …"; comm may hold spaces and parentheses,
// hence the last ')').
std::optional<ProcStat> proc_stat(const std::filesystem::path& dir) {
  auto stat = read_file(dir / "stat");
  if (!stat) return std::nullopt;
  auto close = stat->rfind(')');
  if (close == std::string::npos || close + 2 > stat->size()) return std::nullopt;
  std::istringstream in(stat->substr(close + 2));
  ProcStat ps;
  long pgrp = 0;
  if (!(in >> ps.state >> ps.ppid >> pgrp >> ps.session)) return std::nullopt;
  ps.pid = std::stol(dir.filename().string());
  return ps;
}

std::string cmdline_of(const std::filesystem::path& dir) {
  std::string cmd = read_file(dir / "cmdline").value_or("");
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

// Calls fn(its /proc directory, its stat) for every process.
template <class Fn>
void each_process(Fn fn) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (auto ps = proc_stat(it->path())) fn(it->path(), *ps);
  }
}

// SIGKILLs each of `now`, adding those not listed yet to `all`.
void kill_listed(const std::vector<LeftoverProcess>& now, std::vector<LeftoverProcess>& all) {
  for (const auto& p : now) {
    ::kill(p.pid, SIGKILL);
    if (std::none_of(all.begin(), all.end(), [&](const LeftoverProcess& q) { return q.pid == p.pid; })) all.push_back(p);
  }
}

// The processes envfix adopted (their parent died: a double fork, a daemon): none it spawned.
std::vector<LeftoverProcess> adopted() {
  std::vector<LeftoverProcess> out;
  const long self = ::getpid();
  std::lock_guard lock(g_children_mu);
  each_process([&](const std::filesystem::path& dir, const ProcStat& ps) {
    if (ps.ppid != self || g_children.contains(static_cast<pid_t>(ps.pid))) return;
    if (ps.state == 'Z')
      (void)::waitpid(static_cast<pid_t>(ps.pid), nullptr, WNOHANG); // ended on its own: reaped
    else
      out.push_back({static_cast<int>(ps.pid), cmdline_of(dir)});
  });
  return out;
}

// Kills what escaped the session and was adopted, and reaps it.
void stop_adopted(std::vector<LeftoverProcess>& all) {
  for (int round = 0; round < 5; ++round) {
    auto now = adopted();
    if (now.empty()) break;
    kill_listed(now, all);
    ::usleep(10000);
    for (const auto& p : now) (void)::waitpid(p.pid, nullptr, WNOHANG);
  }
}

// The processes of session `sid` except its leader. Zombies are left out.
std::vector<LeftoverProcess> session_members(pid_t sid) {
  std::vector<LeftoverProcess> out;
  each_process([&](const std::filesystem::path& dir, const ProcStat& ps) {
    if (ps.session == sid && ps.pid != sid && ps.state != 'Z') out.push_back({static_cast<int>(ps.pid), cmdline_of(dir)});
  });
  return out;
}

// Kills what the child's session still holds. Called while the leader is a zombie (not yet reaped),
// so its pid, the session id, cannot be reused meanwhile. A few rounds: a member may fork while
// the first round kills.
std::vector<LeftoverProcess> stop_session(pid_t sid) {
  std::vector<LeftoverProcess> all;
  for (int round = 0; round < 5; ++round) {
    auto now = session_members(sid);
    if (now.empty()) break;
    kill_listed(now, all);
    ::kill(-sid, SIGKILL);
    ::usleep(10000);
  }
  // What left the session (setsid after a double fork) was adopted by envfix when its parent died.
  stop_adopted(all);
  return all;
}

// Whether the child has exited, without reaping it (WNOWAIT keeps its pid, see stop_session).
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

volatile std::sig_atomic_t g_signal = 0;
std::atomic<int> g_scopes{0};
extern "C" void record_signal(int sig) { g_signal = sig; }

} // namespace

InterruptScope::InterruptScope() {
  g_signal = 0;
  ++g_scopes;
  struct sigaction sa = {};
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &m_old_int);
  ::sigaction(SIGTERM, &sa, &m_old_term);
}

InterruptScope::~InterruptScope() {
  --g_scopes;
  ::sigaction(SIGINT, &m_old_int, nullptr);
  ::sigaction(SIGTERM, &m_old_term, nullptr);
}

int interrupt_signal() { return static_cast<int>(g_signal); }

int pending_interrupt() { return g_scopes > 0 ? static_cast<int>(g_signal) : 0; }

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

// Feeds stdin, captures stdout/stderr, and waits for the child `pid`: until it exits (then the
// pipes are read for drain_after_exit more: a grandchild holding them open does not hold the wait),
// its timeout, or a cancel. The exit is seen through a pidfd in the poll set (or a 20 ms poll
// where there is none). What the child's session still holds is stopped before it is reaped.
SubprocessResult wait_child(pid_t pid, const SubprocessOptions& o, Fd out_r, Fd err_r, Fd in_w) {
  using Clock = std::chrono::steady_clock;
  SubprocessResult res;
  Capture out_cap(o.max_output), err_cap(o.max_output);
  std::string_view to_write = o.stdin_data ? std::string_view(*o.stdin_data) : std::string_view();
  if (to_write.empty())
    in_w = Fd();
  else
    ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  Fd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const auto deadline = Clock::now() + o.timeout;
  std::optional<Clock::time_point> drain_end;
  ::signal(SIGPIPE, SIG_IGN);
  while (true) {
    if (!drain_end && has_exited(pid)) drain_end = Clock::now() + o.drain_after_exit;
    if (drain_end && (!(out_r.valid() || err_r.valid()) || Clock::now() >= *drain_end)) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || (o.cancel && o.cancel())) {
      (left.count() <= 0 ? res.timed_out : res.cancelled) = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[4];
    int n = 0;
    if (out_r.valid()) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_r.valid()) fds[n++] = {err_r.get(), POLLIN, 0};
    if (in_w.valid()) fds[n++] = {in_w.get(), POLLOUT, 0};
    if (exit_fd.valid() && !drain_end) fds[n++] = {exit_fd.get(), POLLIN, 0};
    long long wait_ms = std::min<long long>(left.count(), o.cancel ? 100 : 1000);
    if (!exit_fd.valid() && !drain_end) wait_ms = std::min<long long>(wait_ms, 20);
    if (drain_end)
      wait_ms = std::min<long long>(wait_ms,
                                    std::chrono::duration_cast<std::chrono::milliseconds>(*drain_end - Clock::now()).count() + 1);
    int pr = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::max<long long>(wait_ms, 0)));
    if (pr < 0 && errno != EINTR) break;
    for (int i = 0; i < n && pr > 0; ++i) {
      if (!fds[i].revents || (exit_fd.valid() && fds[i].fd == exit_fd.get())) continue;
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
      if (r > 0) {
        (is_out ? out_cap : err_cap).add(buf, static_cast<std::size_t>(r));
        if (o.on_output) o.on_output(is_out ? 1 : 2, std::string_view(buf, static_cast<std::size_t>(r)));
      } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
        (is_out ? out_r : err_r) = Fd();
    }
  }
  if (o.new_session) {
    // The leader first (killed, or exited): then what it left, while its pid is still held.
    for (int ms = 0; (res.timed_out || res.cancelled) && !has_exited(pid) && ms < 5000; ++ms) ::usleep(1000);
    res.leftovers = stop_session(pid);
  }
  int status = 0;
  (void)retry_eintr([&] { return ::waitpid(pid, &status, 0); });
  {
    std::lock_guard lock(g_children_mu);
    g_children.erase(pid);
  }
  res.out = out_cap.take(res.out_dropped);
  res.err = err_cap.take(res.err_dropped);
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.term_signal = WTERMSIG(status);
  return res;
}

namespace {

struct ChildSetup {
  const char* program;
  char* const* argv;
  char* const* envp;
  const char* cwd; // nullptr: envfix's
  int in, out, err;
  bool new_session;
  pid_t parent;
  int exec_errno_fd; // the errno of what failed goes here (close-on-exec)
};

[[noreturn]] void child_failed(int fd, int e) {
  while (::write(fd, &e, sizeof e) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

// The child between fork and exec: async-signal-safe calls only. Its own session or process group
// (a timeout kills its children too), SIGKILL when envfix dies (PR_SET_PDEATHSIG: a SIGKILLed envfix
// orphans no smoke test or repro, issue 60, 6), default dispositions and an empty mask, its pipes.
[[noreturn]] void exec_child(const ChildSetup& s) {
  auto fail_with = [&](int e) { child_failed(s.exec_errno_fd, e); };
  if (s.new_session ? ::setsid() < 0 : ::setpgid(0, 0) < 0) fail_with(errno);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail_with(errno);
  if (::getppid() != s.parent) ::_exit(127); // envfix died before the prctl: nobody waits for this child
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)::sigaction(sig, &dfl, nullptr); // EINVAL for KILL, STOP, glibc's own
  if (::dup2(s.in, 0) < 0 || ::dup2(s.out, 1) < 0 || ::dup2(s.err, 2) < 0) fail_with(errno);
  if (s.cwd && ::chdir(s.cwd) != 0) fail_with(errno);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(s.program, s.argv, s.envp);
  child_failed(s.exec_errno_fd, errno);
}

} // namespace

Expected<SubprocessResult> run_process(const std::vector<std::string>& argv, const SubprocessOptions& o) {
  if (argv.empty()) return make_error(ErrorCode::internal, util::msg("run_process: empty argv"));
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(in_pipe, O_CLOEXEC) != 0)
    return fail_errno(errno, ErrorCode::io, "cannot create pipes: {}", std::strerror(errno));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]), err_r(err_pipe[0]), err_w(err_pipe[1]), in_r(in_pipe[0]), in_w(in_pipe[1]);

  std::vector<std::string> env = build_env(o);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  // The program as posix_spawnp finds it (the caller's PATH), resolved before the fork: the child
  // may only make async-signal-safe calls.
  const char* path = std::getenv("PATH");
  const auto program = find_in_path(argv[0], path && *path ? path : "/bin:/usr/bin");
  auto cannot_start = [&](int e) {
    return with_errno(make_error(ErrorCode::subprocess, util::msg("cannot start {}: {}", argv[0], std::strerror(e))), e);
  };
  if (!program) return cannot_start(ENOENT);
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0)
    return fail_errno(errno, ErrorCode::io, "cannot create pipes: {}", std::strerror(errno));
  Fd exec_r(exec_pipe[0]), exec_w(exec_pipe[1]);
  const std::string program_path = program->string();
  const ChildSetup setup{program_path.c_str(),
                         args.data(),
                         envp.data(),
                         o.cwd ? o.cwd->c_str() : nullptr,
                         in_r.get(),
                         out_w.get(),
                         o.merge_stderr ? out_w.get() : err_w.get(),
                         o.new_session,
                         ::getpid(),
                         exec_w.get()};

  if (o.new_session) become_subreaper();
  // No handler of envfix's runs in the child between the fork and its reset of the dispositions.
  sigset_t all, before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  // Held across the fork, so that adopted() never takes the new child for an adopted one.
  std::unique_lock children(g_children_mu);
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(setup);
  const int fork_errno = errno;
  if (pid > 0) g_children.insert(pid);
  children.unlock();
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) return cannot_start(fork_errno);
  exec_w = Fd();
  // The exec's errno when it failed (the pipe closes on a successful exec).
  int child_errno = 0;
  ssize_t got = -1;
  do got = ::read(exec_r.get(), &child_errno, sizeof child_errno);
  while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    {
      std::lock_guard lock(g_children_mu);
      g_children.erase(pid);
    }
    return cannot_start(child_errno);
  }
  in_r = Fd();
  out_w = Fd();
  err_w = Fd();
  return wait_child(pid, o, std::move(out_r), std::move(err_r), std::move(in_w));
}

} // namespace envfix::util
