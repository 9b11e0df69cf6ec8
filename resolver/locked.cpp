#include "resolver/locked.hpp"

#include <algorithm>
#include <set>

#include "resolver/plan.hpp"

namespace envfix::resolver {

Expected<LockedChanges> locked_changes(const std::vector<InstalledPackage>& installed, std::vector<Pin> locked,
                                       const std::vector<std::string>& family, const specs::MarkerEnvironment& env,
                                       bool allow_conda_overwrite, bool allow_breaking) {
  std::sort(locked.begin(), locked.end(), [](const Pin& a, const Pin& b) { return a.name < b.name; });
  Resolution res;
  res.pins = locked;
  const auto plan = make_plan({&res, installed, family, {"nvidia-"}});
  std::set<std::string> names;
  for (const auto& p : locked) names.insert(p.name);
  LockedChanges out;
  for (const auto& r : plan.remove)
    if (!names.contains(r.name) && std::ranges::find(out.removals, r.dist_info) == out.removals.end())
      out.removals.push_back(r.dist_info);

  // The checks run on what changes: each locked package's installed namesakes go, and what the plan removes.
  Plan touched;
  for (const auto& d : installed)
    if (names.contains(d.name)) touched.remove.push_back(PlanRemove::of(d, RemoveReason::replaced));
  for (const auto& r : plan.remove)
    if (!names.contains(r.name)) touched.remove.push_back(r);
  ENVFIX_TRY_VOID(check_conda(touched, allow_conda_overwrite));
  for (const auto& p : locked)
    touched.install.push_back({p.name, p.version.to_string(), p.file.filename, p.file.url, p.file.sha256, p.file.size, {}, {}});
  ENVFIX_TRY(check_breaking(installed, touched, env, allow_breaking));
  out.warnings = std::move(touched.warnings);
  return out;
}

} // namespace envfix::resolver
