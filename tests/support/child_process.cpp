#include "tests/support/child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace envfix::testing {

Expected<ChildProcess> ChildProcess::spawn(const std::vector<std::string>& argv,
                                           const std::optional<std::filesystem::path>& stderr_file) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return fail(ErrorCode::io, "pipe: {}", std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::string err_path = stderr_file ? stderr_file->string() : "/dev/null";
  pid_t pid = ::fork();
  if (pid < 0) return fail(ErrorCode::subprocess, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0); // own process group: stop() signals the whole group
    ::dup2(pipefd[1], 1);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) ::dup2(err, 2);
    int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  ChildProcess c;
  c.m_pid = pid;
  c.m_out = pipefd[0];
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : m_pid(std::exchange(o.m_pid, -1)), m_out(std::exchange(o.m_out, -1)), m_buffer(std::move(o.m_buffer)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    stop();
    m_pid = std::exchange(o.m_pid, -1);
    m_out = std::exchange(o.m_out, -1);
    m_buffer = std::move(o.m_buffer);
  }
  return *this;
}

ChildProcess::~ChildProcess() { stop(); }

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = m_buffer.find('\n'); nl != std::string::npos) {
      std::string line = m_buffer.substr(0, nl);
      m_buffer.erase(0, nl + 1);
      return line;
    }
    if (m_out < 0) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{m_out, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(m_out, buf, sizeof buf);
    if (n <= 0) {
      ::close(m_out);
      m_out = -1;
      return std::nullopt;
    }
    m_buffer.append(buf, static_cast<std::size_t>(n));
  }
}

bool ChildProcess::running() {
  if (m_pid <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(m_pid, &status, WNOHANG);
  if (r == m_pid) {
    m_pid = -1;
    return false;
  }
  return true;
}

void ChildProcess::stop() {
  if (m_pid > 0) {
    ::kill(-m_pid, SIGTERM);
    ::kill(m_pid, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (m_pid > 0) {
      ::kill(-m_pid, SIGKILL);
      ::kill(m_pid, SIGKILL);
      int status = 0;
      ::waitpid(m_pid, &status, 0);
      m_pid = -1;
    }
  }
  if (m_out >= 0) {
    ::close(m_out);
    m_out = -1;
  }
}

Expected<int> free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(ErrorCode::io, "socket: {}", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    return fail(ErrorCode::io, "bind: {}", std::strerror(errno));
  }
  ::close(s);
  return ntohs(a.sin_port);
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

} // namespace envfix::testing
