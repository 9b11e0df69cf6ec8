#pragma once
// What a test sees of envfix's transactions under <prefix>/.envfix/txn (docs/architecture.md, The
// transaction): the transaction directories and the newest one's journal state. One copy for the
// installer's SIGKILL test and the reliability harness.
#include <filesystem>
#include <string>
#include <vector>

namespace envfix::testing {

// The ids of the transaction directories now present, oldest first (ids sort by time).
[[nodiscard]] std::vector<std::string> txn_ids(const std::filesystem::path& prefix);

// The state of the newest transaction that is not in `ignore` (e.g. the ids present before a run):
// "" (none), "preparing" (a directory without a journal yet), or the journal's state.
[[nodiscard]] std::string txn_phase(const std::filesystem::path& prefix, const std::vector<std::string>& ignore = {});

} // namespace envfix::testing
