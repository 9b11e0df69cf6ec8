#include "fetch/locked.hpp"

#include <filesystem>
#include <set>
#include <system_error>

#include "specs/name.hpp"
#include "specs/requirement.hpp"

namespace envfix::fetch {

namespace fs = std::filesystem;

std::vector<index::Candidate> locked_candidates(const lockfile::LockTarget& target, const std::vector<std::string>& find_links) {
  std::vector<index::Candidate> cands;
  for (const auto& p : target.packages) {
    index::Candidate c;
    c.project = p.name;
    c.filename = p.filename;
    c.url = p.url;
    c.sha256 = p.sha256;
    c.size = p.size;
    c.index_url = target.index;
    c.recorded = index::Candidate::Recorded::by_lockfile;
    for (const auto& dir : find_links) {
      std::error_code ec;
      const fs::path f = fs::path(dir) / p.filename;
      if (fs::is_regular_file(f, ec)) {
        c.url = "file://" + fs::absolute(f, ec).string();
        break;
      }
    }
    cands.push_back(std::move(c));
  }
  return cands;
}

Repointed repoint(std::vector<index::Candidate>& cands, std::string_view from, std::string_view to) {
  std::string old(from), mirror(to);
  while (old.ends_with('/')) old.pop_back();
  while (mirror.ends_with('/')) mirror.pop_back();
  Repointed r;
  for (auto& c : cands) {
    if (c.url.starts_with("file://")) continue; // a --find-links copy serves it
    if (!old.empty() && old != mirror && c.url.starts_with(old + "/")) {
      c.url = mirror + c.url.substr(old.size());
      ++r.moved;
    } else
      ++r.kept;
  }
  if (r.moved)
    r.note = r.moved == 1 ? util::msg("--mirror: 1 locked file re-pointed from {} to {} (checked against its locked sha256)",
                                      index::redact_url(from), index::redact_url(to))
                          : util::msg("--mirror: {} locked files re-pointed from {} to {} (each checked against its locked "
                                      "sha256)",
                                      r.moved, index::redact_url(from), index::redact_url(to));
  if (r.kept)
    r.warning = old.empty() ? util::msg("--mirror: {} locked file(s) not from the framework's index (the lock names no framework "
                                        "index --mirror replaces) are fetched from where the lock names them",
                                        r.kept)
                            : util::msg("--mirror: {} locked file(s) not from the framework's index are fetched from where the "
                                        "lock names them",
                                        r.kept);
  return r;
}

std::vector<WantedWheel> locked_wanted(const lockfile::LockFile& lock, const lockfile::LockTarget& target,
                                       const std::vector<index::Candidate>& cands) {
  std::set<std::string> requested;
  for (const auto& req : lock.request)
    if (auto q = specs::Requirement::parse(req)) requested.insert(q->normalized_name());
  std::vector<WantedWheel> want;
  for (std::size_t i = 0; i < target.packages.size(); ++i) {
    const auto& p = target.packages[i];
    const auto name = specs::normalize_name(p.name);
    want.push_back({name, p.version, cands[i], requested.contains(name)});
  }
  return want;
}

std::vector<resolver::Pin> locked_pins(const lockfile::LockTarget& target, const std::vector<index::Candidate>& cands) {
  std::vector<resolver::Pin> pins;
  for (std::size_t i = 0; i < target.packages.size(); ++i)
    if (auto v = specs::Version::parse(target.packages[i].version))
      pins.push_back({specs::normalize_name(target.packages[i].name), *v, cands[i], {}, {"<lockfile>"}});
  return pins;
}

} // namespace envfix::fetch
