#pragma once
// The environment lock: an flock on <prefix>/.envfix/lock, held by whoever changes the environment.
// `apply` takes it before it probes and plans (api/apply.cpp), so a second apply on the same venv
// plans on what the first left, not on a view that is stale by the time it installs; the
// transaction (installer/transaction.cpp) takes it again. flock belongs to the open file
// description, so a second open+flock in one process would wait on itself: acquisitions in one
// process share one descriptor per lock file (keyed by device and inode) and count.
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "util/error.hpp"

namespace envfix::installer {

struct EnvLockOptions {
  bool wait = true;                                       // false: fail at once when another process holds it
  std::chrono::milliseconds bound{std::chrono::hours(1)}; // waiting longer fails (the holder's pid named)
  // Told once, when another process holds the lock and this one starts waiting:
  // "waiting for the lock on <prefix> held by pid N".
  std::function<void(const util::Message&)> on_wait;
};

// The prefix apply locks before it plans, found without running Python: the interpreter's
// <prefix>/bin/.. when it is a venv (pyvenv.cfg), a conda prefix or one envfix changed before
// (.envfix/). Any other (a system interpreter) gives nullopt: it gets the lock from the transaction
// only, so that a refused apply (PEP 668) leaves no .envfix/ there.
[[nodiscard]] std::optional<std::filesystem::path> lockable_prefix(const std::filesystem::path& python);

class EnvLock {
public:
  [[nodiscard]] static Expected<EnvLock> acquire(const std::filesystem::path& prefix, const EnvLockOptions& options = {});
  [[nodiscard]] static Expected<EnvLock> acquire(const std::filesystem::path& prefix, bool wait) {
    return acquire(prefix, EnvLockOptions{.wait = wait});
  }
  EnvLock(EnvLock&& other) noexcept;
  EnvLock& operator=(EnvLock&& other) noexcept;
  EnvLock(const EnvLock&) = delete;
  EnvLock& operator=(const EnvLock&) = delete;
  ~EnvLock();

private:
  EnvLock() = default;
  void release();
  std::string m_key; // "dev:ino" of the lock file; empty when moved from
};

} // namespace envfix::installer
