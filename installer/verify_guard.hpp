#pragma once
// What the transaction's verify step leaves in the environment (docs/reliability.md, the smoke test).
// The verify step is the smoke test: it imports the new set, so a refused build's own code runs, and
// it may write under the prefix (a .pth that Python runs at every later start, a script in bin/)
// outside the journal. The scheme directories are listed before it runs; after a failed verify, what
// appeared is removed before the rollback, and what existed and was changed in place (which the
// rollback cannot restore) is named, so that a rollback never calls changed files "unchanged".
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace envfix::installer {

class VerifyGuard {
public:
  // Every entry under `roots` (directories inside another root are walked once), except `state_dir`
  // (<prefix>/.envfix: journals, backups) and the transaction's .envfix-txn-* directories.
  [[nodiscard]] static VerifyGuard take(const std::vector<std::filesystem::path>& roots, const std::filesystem::path& state_dir);

  struct Aftermath {
    std::vector<std::string> removed;  // entries the verify step created (bytecode aside), removed again
    std::vector<std::string> changed;  // entries that existed and were changed in place: not restorable
    std::vector<std::string> vanished; // entries that existed and were deleted: not restorable
    std::vector<std::string> failed;   // created entries that could not be removed, with why
    [[nodiscard]] bool restored() const { return changed.empty() && vanished.empty() && failed.empty(); }
  };
  // After a failed verify, before the rollback. `installed`: the files and directories this
  // transaction put in place, which the rollback takes away again (a change to them does not count).
  // Bytecode (.pyc, __pycache__) created or changed is removed without a word: Python writes it on
  // import and writes it again.
  [[nodiscard]] Aftermath clean_up(const std::set<std::string>& installed) const;

private:
  struct Entry {
    mode_t type = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Entry&) const = default;
    [[nodiscard]] static Entry of(const struct stat& st);
  };
  std::vector<std::filesystem::path> m_roots;
  std::filesystem::path m_state_dir;
  std::map<std::string, Entry> m_entries;
};

} // namespace envfix::installer
