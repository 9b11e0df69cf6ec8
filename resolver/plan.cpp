#include "resolver/plan.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace envfix::resolver {

std::string_view to_string(RemoveReason r) {
  switch (r) {
  case RemoveReason::replaced: return "replaced";
  case RemoveReason::companion_inconsistent: return "companion-inconsistent";
  case RemoveReason::duplicate: return "duplicate";
  case RemoveReason::unused_cuda_runtime: return "unused-cuda-runtime";
  }
  return "replaced";
}

std::uint64_t Plan::download_size() const {
  std::uint64_t n = 0;
  for (const auto& i : install) n += i.size.value_or(0);
  return n;
}

Plan make_plan(const PlanInputs& in) {
  Plan plan;
  const Resolution& res = *in.resolution;
  plan.rejected = res.rejected;
  std::map<std::string, std::vector<const InstalledPackage*>> installed;
  for (const auto& p : in.installed) installed[p.name].push_back(&p);

  std::set<std::string> in_set;
  for (const auto& pin : res.pins) {
    in_set.insert(pin.name);
    auto it = installed.find(pin.name);
    const InstalledPackage* same = nullptr;
    if (it != installed.end())
      for (const auto* p : it->second)
        if (p->version == pin.version && p->version.local() == pin.version.local()) same = p;
    if (same && !in.reinstall && !(in.replaces_installed && in.replaces_installed(pin))) {
      plan.keep.push_back(pin.name + "==" + pin.version.to_string());
      for (const auto* p : it->second)
        if (p != same) plan.remove.push_back(PlanRemove::of(*p, RemoveReason::duplicate));
      continue;
    }
    PlanInstall add{pin.name, pin.version.to_string(), pin.file.filename, pin.file.url, pin.file.sha256, pin.file.size, ""};
    if (pin.file.yanked) // chosen only through an exact pin (PEP 592), which says why it was yanked
      plan.warnings.push_back(util::msg(
          "{} {} is yanked by its index ({}): installed because it is pinned exactly", pin.name, pin.version.to_string(),
          pin.file.yanked_reason.empty() ? util::msg("no reason given") : util::msg("reason: {}", pin.file.yanked_reason)));
    if (it != installed.end()) {
      for (const auto* p : it->second) {
        if (add.replaces.empty()) {
          add.replaces = p->version.to_string();
          add.required_by = pin.required_by;
        }
        plan.remove.push_back(PlanRemove::of(*p, RemoveReason::replaced));
      }
    }
    plan.install.push_back(std::move(add));
  }

  // Framework packages outside the new set would be left inconsistent with it.
  std::set<std::string> removed;
  for (const auto& r : plan.remove) removed.insert(r.name);
  std::set<std::string> family(in.framework_packages.begin(), in.framework_packages.end());
  bool set_has_family = std::any_of(res.pins.begin(), res.pins.end(), [&](const Pin& p) { return family.contains(p.name); });
  for (const auto& [name, list] : installed) {
    if (!set_has_family || !family.contains(name) || in_set.contains(name)) continue;
    for (const auto* p : list) plan.remove.push_back(PlanRemove::of(*p, RemoveReason::companion_inconsistent));
    removed.insert(name);
  }
  // Stray duplicates of packages not in the set: keep the newest, drop the rest.
  for (const auto& [name, list] : installed) {
    if (in_set.contains(name) || removed.contains(name) || list.size() < 2) continue;
    auto newest = *std::max_element(list.begin(), list.end(), [](auto* a, auto* b) { return a->version < b->version; });
    for (const auto* p : list)
      if (p != newest) plan.remove.push_back(PlanRemove::of(*p, RemoveReason::duplicate));
  }
  // The old variant's CUDA runtime wheels that nothing kept still needs.
  auto is_runtime = [&](const std::string& n) {
    return std::any_of(in.cuda_runtime_prefixes.begin(), in.cuda_runtime_prefixes.end(),
                       [&](const std::string& pre) { return n.starts_with(pre); });
  };
  bool changes_framework =
      std::any_of(plan.install.begin(), plan.install.end(), [&](const PlanInstall& i) { return family.contains(i.name); });
  if (changes_framework) {
    std::set<std::string> needed;
    for (const auto& [name, list] : installed) {
      if (in_set.contains(name) || removed.contains(name) || is_runtime(name)) continue;
      for (const auto* p : list)
        for (const auto& r : p->requires_dist) needed.insert(r.normalized_name());
    }
    for (const auto& [name, list] : installed) {
      if (!is_runtime(name) || in_set.contains(name) || removed.contains(name) || needed.contains(name)) continue;
      for (const auto* p : list) plan.remove.push_back(PlanRemove::of(*p, RemoveReason::unused_cuda_runtime));
    }
  }
  std::sort(plan.remove.begin(), plan.remove.end(),
            [](const PlanRemove& a, const PlanRemove& b) { return std::tie(a.name, a.version) < std::tie(b.name, b.version); });
  return plan;
}

} // namespace envfix::resolver
