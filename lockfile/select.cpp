#include "lockfile/select.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/strings.hpp"

namespace envfix::lockfile {

namespace {

std::string plus_joined(const std::set<std::string>& s) {
  return s.empty() ? std::string("none") : util::join(std::vector<std::string>(s.begin(), s.end()), "+");
}

} // namespace

std::vector<std::string> mismatches(const LockTarget& t, const HostView& host) {
  std::vector<std::string> why;
  const std::set<std::string> tg(t.host.gpus.begin(), t.host.gpus.end());
  if (host.gpus != tg) why.push_back(fmt::format("gpus {} (host: {})", plus_joined(tg), plus_joined(host.gpus)));
  if (t.host.python != host.python) why.push_back(fmt::format("python {} (host: {})", t.host.python, host.python));
  if (std::find(host.platforms.begin(), host.platforms.end(), t.host.platform) == host.platforms.end())
    why.push_back(fmt::format("platform {} (not supported by the host interpreter)", t.host.platform));
  if (!t.host.driver_min.empty()) {
    if (host.driver.empty())
      why.push_back(fmt::format("driver >= {} (host: no driver)", t.host.driver_min));
    else if (util::compare_dotted_numbers(host.driver, t.host.driver_min) < 0)
      why.push_back(fmt::format("driver >= {} (host: {})", t.host.driver_min, host.driver));
  }
  return why;
}

std::vector<std::string> Selection::reasons() const {
  std::vector<std::string> out;
  for (const auto& f : considered)
    if (!f.mismatches.empty()) out.push_back(fmt::format("target {} needs {}", f.target->id, util::join(f.mismatches, "; ")));
  return out;
}

Selection select(const LockFile& lock, const HostView& host) {
  Selection s;
  for (const auto& t : lock.targets) {
    s.considered.push_back({&t, mismatches(t, host)});
    if (s.considered.back().mismatches.empty()) {
      s.chosen = &t;
      break;
    }
  }
  return s;
}

} // namespace envfix::lockfile
