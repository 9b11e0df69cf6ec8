#pragma once
// envfix rollback | recover (docs/architecture.md, The transaction): the target interpreter's prefix
// found as every command finds it (probe::default_interpreter), then the installer's rollback stack
// or recovery. cli/command_rollback.cpp renders what these return.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "api/options.hpp"
#include "installer/transaction.hpp"
#include "util/error.hpp"

namespace envfix::api {

// The kept backups of the target, newest first (`envfix rollback` undoes the first); an error
// (not_found, with the hint that says how backups are kept) when there is none.
[[nodiscard]] Expected<std::vector<installer::BackupInfo>> kept_backups(const Options& o);

struct RollbackReport {
  installer::RollbackResult result;
  std::size_t steps_left = 0; // older backups still kept: each `envfix rollback` undoes the newest
};
[[nodiscard]] Expected<RollbackReport> rollback(const Options& o);

// Deletes the kept backups; the bytes freed.
[[nodiscard]] Expected<std::uint64_t> drop_backups(const Options& o);

struct RecoverReport {
  std::filesystem::path prefix;
  std::vector<util::Message> actions; // empty: nothing to recover
};
[[nodiscard]] Expected<RecoverReport> recover(const Options& o);

} // namespace envfix::api
