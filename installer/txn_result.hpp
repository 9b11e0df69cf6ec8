#pragma once
// What a committed transaction did (installer/transaction.hpp): pure data, which cli/ renders.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "installer/link_mode.hpp"
#include "installer/txn_meta.hpp"
#include "util/message.hpp"

namespace envfix::installer {

struct TransactionResult {
  std::string id;
  std::filesystem::path txn_dir; // <prefix>/.envfix/txn/<id>
  std::vector<DistRef> installed, removed;
  std::size_t files_installed = 0, files_removed = 0;
  std::uint64_t backup_bytes = 0;    // disk held by the backup kept for rollback
  std::size_t cache_hits = 0;        // wheels linked from the unpacked cache as they were
  std::optional<LinkMode> link_mode; // how files came from the unpacked cache, if they did
  std::vector<util::Message> warnings;
  std::vector<util::Message> recovered; // what the automatic recover() did first
  // Wall seconds of each step of run(), in order ("lookup", "unpack", "link", "kernel-check",
  // "plan", "journal", "remove", "install", "stamps", "verify", "sync", "cleanup"): where an
  // install spends its time, for `apply --format json` (applied.timings.steps).
  std::vector<std::pair<std::string, double>> steps;
};

} // namespace envfix::installer
