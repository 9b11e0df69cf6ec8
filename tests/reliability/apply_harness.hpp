#pragma once
// Shared by the fault tests of `envfix apply` (tests/reliability/test_apply_*.cpp): a served index of a
// small fixture framework ("bulk", many files, a configurable smoke test), venvs, the real envfix binary
// run to completion or in the background (to signal it, or with an RLIMIT_FSIZE), and a manifest of a
// venv (every path, type, mode and sha256) to prove "byte-identical".
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>
#include "tests/support/tree_manifest.hpp"
#include "tests/support/txn_journal.hpp"

namespace envfix::testing {

class NginxServer;

// path (relative) -> "type mode sha256|target"; envfix's own <prefix>/.envfix state is left out.
[[nodiscard]] Manifest manifest(const std::filesystem::path& root); // tests/support/tree_manifest.hpp

struct EnvfixRun {
  int rc = -1;         // exit code, or -1 when killed by a signal
  int term_signal = 0; // the signal that killed it
  bool timed_out = false;
  std::string out, err;
};

struct SpawnOptions {
  std::map<std::string, std::string> env;   // added to the test's environment
  std::optional<unsigned long> fsize_limit; // RLIMIT_FSIZE in bytes; SIGXFSZ ignored so write() gets EFBIG
};

// A running envfix started by BackgroundEnvfix::start; stdout/stderr go to files.
class BackgroundEnvfix {
public:
  static std::unique_ptr<BackgroundEnvfix> start(const std::vector<std::string>& argv, const SpawnOptions& o,
                                                 const std::filesystem::path& log_dir);
  ~BackgroundEnvfix();
  pid_t pid() const { return m_pid; }
  bool exited();                                     // reaps when it has
  EnvfixRun wait(std::chrono::milliseconds timeout); // SIGKILL at the timeout (timed_out = true)
  std::string err_so_far() const;                    // its stderr until now

private:
  pid_t m_pid = -1;
  bool m_reaped = false;
  int m_status = 0;
  std::filesystem::path m_out, m_err;
};

// One test's world: temp dir, the "bulk" index served by nginx over HTTPS, matrices for the framework.
//   bulk 1.0.0+cu128: 300 files in bulk/a..c/ + 16 KiB pad
//   bulk 2.0.0+cu128: 400 files in bulk/a..h/ + 1 MiB pad, requires helper==1.0
//   helper 1.0: 40 files
//   bulk 3.0.0+cu128: 360 files + 512 KiB pad, requires helper==1.0 and tail==1.0 (a three-wheel set)
//   tail 1.0: 120 files + 256 KiB pad
// The smoke test (step A, and the CPU step the planned --gpu sm_90 runs) writes its pid to $SMOKE_PIDFILE when set, sleeps
// $SMOKE_SLEEP seconds, then waits until the file $SMOKE_GATE exists (a test's own moment, not a guessed duration), and fails
// when $SMOKE_FAIL is set; $SMOKE_GRANDCHILD: it first starts `sleep 1000` (which keeps its stdout) and writes that pid there;
// $SMOKE_ENV_OUT: it writes its environment there.
class ApplyWorld {
public:
  ApplyWorld();
  ~ApplyWorld();
  const std::filesystem::path& root() const { return m_root; }
  std::filesystem::path cache() const { return m_root / "cache"; }
  std::filesystem::path venv(const std::string& name); // python -m venv --without-pip
  std::filesystem::path make_venv_at(const std::filesystem::path& dir);
  // argv for `envfix apply bulk==<version> …` into the venv (framework mode, fake sm_90 GPU).
  std::vector<std::string> apply_argv(const std::filesystem::path& venv, const std::string& version,
                                      const std::filesystem::path& cache = {}, std::vector<std::string> extra = {}) const;
  std::vector<std::string> envfix_argv(std::vector<std::string> args) const; // binary + args
  EnvfixRun run(const std::vector<std::string>& argv, const SpawnOptions& o = {},
                std::chrono::seconds timeout = std::chrono::seconds(600));
  std::unique_ptr<BackgroundEnvfix> spawn(const std::vector<std::string>& argv, const SpawnOptions& o = {});
  std::map<std::string, std::string> base_env() const;

private:
  std::filesystem::path m_root;
  std::unique_ptr<NginxServer> m_nginx;
  int m_spawned = 0;
};

// A private mount namespace for this test process (mounts vanish when it exits), or the reason why
// not. Idempotent.
[[nodiscard]] std::optional<std::string> enter_private_mount_namespace();

} // namespace envfix::testing
