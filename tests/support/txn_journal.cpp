#include "tests/support/txn_journal.hpp"

#include <algorithm>
#include <fstream>

namespace envfix::testing {

namespace fs = std::filesystem;

std::vector<std::string> txn_ids(const fs::path& prefix) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (fs::directory_iterator it(prefix / ".envfix" / "txn", ec), end; !ec && it != end; it.increment(ec))
    ids.push_back(it->path().filename().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string txn_phase(const fs::path& prefix, const std::vector<std::string>& ignore) {
  const auto ids = txn_ids(prefix);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    if (std::find(ignore.begin(), ignore.end(), *it) != ignore.end()) continue;
    std::ifstream in(prefix / ".envfix" / "txn" / *it / "journal");
    std::string state;
    if (!in || !std::getline(in, state)) return "preparing";
    return state;
  }
  return "";
}

} // namespace envfix::testing
