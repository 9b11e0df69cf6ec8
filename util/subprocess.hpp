#pragma once
// Run a child process with captured output and a timeout. No shell is involved.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <filesystem>

#include "util/error.hpp"

namespace envfix::util {

struct SubprocessOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::optional<std::filesystem::path> cwd;
  std::map<std::string, std::string> set_env; // added/overridden in the child
  std::vector<std::string> unset_env;         // removed in the child
  std::optional<std::string> stdin_data;      // written to the child's stdin, then closed
  bool merge_stderr = false;                  // stderr into stdout
  // Polled while the child runs (at least every 100 ms, and whenever a signal interrupts the wait):
  // true kills the child's process group, like the timeout does (SubprocessResult::cancelled).
  std::function<bool()> cancel;
  // Output kept per stream: the first and the last half of this many bytes, with a note of how
  // much was dropped in between. A child that prints forever (an import in a loop, a "python"
  // that is `yes`) costs this much memory, not all of it.
  std::size_t max_output = std::size_t{4} << 20;
  // The child's own session (setsid): a terminal's ^C does not reach it, and what it leaves behind
  // (a grandchild in that session, in any process group) is found once it ends, killed, and
  // listed in SubprocessResult::leftovers. For code envfix runs in the target: the smoke test and
  // `verify --app`.
  bool new_session = false;
  // Removes every variable carrying URL credentials (util/url.hpp drop_index_credentials).
  bool drop_index_credentials = false;
  // Once the child has exited, its pipes are read this long more, then closed: a grandchild that
  // keeps stdout open (`sleep 1000 &`) does not hold the wait.
  std::chrono::milliseconds drain_after_exit{200};
  // Told every chunk read from the child's stdout (1) or stderr (2) as it arrives, besides its
  // capture: for a caller that follows what the child reports while it runs (smoke/run.cpp).
  std::function<void(int stream, std::string_view data)> on_output;
};

// A process of the child's session still running when the child ended (SubprocessOptions::new_session).
struct LeftoverProcess {
  int pid = 0;
  std::string command; // /proc/<pid>/cmdline, arguments joined by spaces
};

struct SubprocessResult {
  int exit_code = -1;     // valid when !signaled
  int term_signal = 0;    // signal that ended the child, 0 if none
  bool timed_out = false; // killed by us after the timeout
  bool cancelled = false; // killed by us because options.cancel said so
  std::string out;
  std::string err;
  std::uint64_t out_dropped = 0; // bytes of stdout / stderr left out by max_output
  std::uint64_t err_dropped = 0;
  std::vector<LeftoverProcess> leftovers; // found and SIGKILLed when the child ended (new_session)
  [[nodiscard]] bool ok() const { return !timed_out && !cancelled && term_signal == 0 && exit_code == 0; }
};

// Fails only when the process could not be started; a non-zero exit is data in the result.
[[nodiscard]] Expected<SubprocessResult> run_process(const std::vector<std::string>& argv, const SubprocessOptions& options = {});

// While one lives, SIGINT and SIGTERM are recorded (interrupt_signal()) instead of ending envfix, so
// a wait on a child (SubprocessOptions::cancel polling interrupt_signal()) can kill the child's
// session first and the caller can exit 128 + the signal. The previous handlers come back after.
class InterruptScope {
public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

private:
  struct sigaction m_old_int = {}, m_old_term = {};
};
// The signal an InterruptScope recorded, 0 if none (kept after the scope ends: the exit code says it).
[[nodiscard]] int interrupt_signal();
// The same while an InterruptScope lives, else 0: what work that stops on a signal polls
// (index/http_client.cpp), so that one recorded by an earlier scope stops nothing later.
[[nodiscard]] int pending_interrupt();

// Search PATH (or the given PATH value) for an executable.
[[nodiscard]] std::optional<std::filesystem::path> find_in_path(const std::string& name, const char* path_value = nullptr);

} // namespace envfix::util
