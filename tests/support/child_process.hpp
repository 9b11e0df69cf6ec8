#pragma once
// A background child process for test servers: started with fork/exec, its stdout readable line by
// line, killed (SIGTERM, then SIGKILL) and reaped in the destructor so no process outlives a test.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "util/error.hpp"

namespace envfix::testing {

class ChildProcess {
public:
  // stdout is a pipe (read_line); stderr goes to `stderr_file` when given, else /dev/null.
  [[nodiscard]] static Expected<ChildProcess> spawn(const std::vector<std::string>& argv,
                                                    const std::optional<std::filesystem::path>& stderr_file = {});
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // One line of stdout (without '\n'), or nullopt on EOF/timeout.
  [[nodiscard]] std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  [[nodiscard]] bool running();
  void stop();
  [[nodiscard]] pid_t pid() const { return m_pid; }

private:
  ChildProcess() = default;
  pid_t m_pid = -1;
  int m_out = -1;
  std::string m_buffer;
};

// A loopback TCP port that was free a moment ago.
[[nodiscard]] Expected<int> free_port();
// Wait until 127.0.0.1:port accepts connections.
[[nodiscard]] bool wait_for_port(int port, std::chrono::milliseconds timeout);

} // namespace envfix::testing
