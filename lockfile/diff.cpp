#include "lockfile/diff.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

namespace envfix::lockfile {

std::vector<std::string> diff(const LockFile& a, const LockFile& b) {
  std::vector<std::string> out;
  if (a.framework != b.framework || a.request != b.request) out.push_back("the request or framework changed");
  std::set<std::string> ids;
  for (const auto& t : a.targets) ids.insert(t.id);
  for (const auto& t : b.targets) ids.insert(t.id);
  for (const auto& id : ids) {
    const auto* ta = a.find(id);
    const auto* tb = b.find(id);
    if (!ta) {
      out.push_back(fmt::format("target {}: new", id));
      continue;
    }
    if (!tb) {
      out.push_back(fmt::format("target {}: no longer requested", id));
      continue;
    }
    std::map<std::string, const LockedPackage*> pa, pb;
    for (const auto& p : ta->packages) pa[p.name] = &p;
    for (const auto& p : tb->packages) pb[p.name] = &p;
    for (const auto& [n, p] : pa)
      if (!pb.contains(n)) out.push_back(fmt::format("target {}: - {}=={}", id, n, p->version));
    for (const auto& [n, p] : pb) {
      auto it = pa.find(n);
      if (it == pa.end())
        out.push_back(fmt::format("target {}: + {}=={}", id, n, p->version));
      else if (!(*it->second == *p))
        out.push_back(fmt::format("target {}: {} {} -> {}{}", id, n, it->second->version, p->version,
                                  it->second->sha256 != p->sha256 ? " (file changed)" : ""));
    }
    if (ta->index != tb->index || ta->channel != tb->channel || ta->variant != tb->variant || !(ta->host == tb->host))
      out.push_back(fmt::format("target {}: index, channel, variant or host changed", id));
  }
  return out;
}

} // namespace envfix::lockfile
