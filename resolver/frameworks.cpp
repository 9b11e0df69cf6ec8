// Framework and variant detection from installed dists (see frameworks.hpp).
#include "resolver/frameworks.hpp"

#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "specs/name.hpp"

namespace envfix::resolver {

namespace {

// Every package of one variant's set: its main package, its packages and its kernel packages.
std::set<std::string> variant_set(const matrices::Framework& fw, const matrices::Variant& v) {
  std::set<std::string> out{specs::normalize_name(fw.main_package_of(v.name))};
  for (const auto* list : {&v.packages, &v.kernels})
    for (const auto& p : *list) out.insert(specs::normalize_name(p));
  return out;
}

const probe::InstalledDist* find_dist(const std::vector<probe::InstalledDist>& installed, std::string_view normalized) {
  for (const auto& d : installed)
    if (d.normalized_name() == normalized) return &d;
  return nullptr;
}

} // namespace

std::vector<const matrices::Framework*> installed_frameworks(const matrices::Knowledge& k,
                                                             const std::vector<probe::InstalledDist>& installed) {
  std::vector<const matrices::Framework*> out;
  for (const auto& fw : k.frameworks()) {
    std::set<std::string> mains{specs::normalize_name(fw.main_package)};
    for (const auto& v : fw.variants) mains.insert(specs::normalize_name(fw.main_package_of(v.name)));
    if (std::any_of(installed.begin(), installed.end(), [&](const auto& d) { return mains.count(d.normalized_name()) > 0; }))
      out.push_back(&fw);
  }
  return out;
}

FrameworkTargets choose_frameworks(const std::string& asked, bool detect, const matrices::Knowledge* k,
                                   const std::vector<probe::InstalledDist>& installed) {
  if (!detect || !k) return {{asked}, "option", {}};
  FrameworkTargets c;
  for (const auto* fw : installed_frameworks(*k, installed)) c.names.push_back(fw->name);
  if (c.names.empty()) return {{asked}, "assumed", util::msg("no framework installed; assuming {} (use --framework)", asked)};
  // The default (torch) first when it is one of them: plan and apply act on the first.
  if (auto it = std::find(c.names.begin(), c.names.end(), asked); it != c.names.end()) std::rotate(c.names.begin(), it, it + 1);
  c.from = "installed";
  return c;
}

std::vector<const matrices::Framework*> requested_frameworks(const matrices::Knowledge& k,
                                                             const std::vector<specs::Requirement>& request) {
  std::vector<const matrices::Framework*> out;
  for (const auto& r : request)
    for (const auto& fw : k.frameworks())
      if (auto role = package_role(fw, r.normalized_name());
          (role == "main" || role == "companion") && std::find(out.begin(), out.end(), &fw) == out.end())
        out.push_back(&fw);
  return out;
}

Expected<FrameworkTargets> choose_plan_framework(const std::string& asked, bool detect, const matrices::Knowledge* k,
                                                 const std::vector<probe::InstalledDist>& installed,
                                                 const std::vector<specs::Requirement>& request) {
  if (!detect || !k || request.empty()) return choose_frameworks(asked, detect, k, installed);
  auto named = requested_frameworks(*k, request);
  if (named.empty()) return FrameworkTargets{{}, "none", {}};
  if (named.size() == 1) return FrameworkTargets{{named.front()->name}, "request", {}};
  std::vector<std::string> names, causes;
  for (const auto* fw : named) {
    names.push_back(fw->name);
    std::vector<std::string> reqs;
    for (const auto& r : request)
      if (auto role = package_role(*fw, r.normalized_name()); role == "main" || role == "companion")
        reqs.push_back(r.to_string());
    causes.push_back(fmt::format("{}: {}", fw->name, fmt::join(reqs, ", ")));
  }
  Error e{ErrorCode::invalid_input,
          fmt::format("the request names {} frameworks ({}); envfix plans one framework's set at a time", named.size(),
                      fmt::join(names, ", ")),
          causes,
          fmt::format("pass --framework {} to plan that set (the other packages are then resolved beside it, from its "
                      "index), or run envfix once per framework, each in its own environment",
                      names.front())};
  return std::unexpected(std::move(e));
}

std::string package_role(const matrices::Framework& fw, std::string_view n) {
  if (n == specs::normalize_name(fw.main_package)) return "main";
  for (const auto& v : fw.variants)
    if (n == specs::normalize_name(fw.main_package_of(v.name))) return "main";
  for (const auto* list : {&fw.companions, &fw.optional_companions})
    for (const auto& c : *list)
      if (n == specs::normalize_name(c)) return "companion";
  for (const auto& v : fw.variants)
    if (variant_set(fw, v).count(std::string(n))) return "variant";
  return "";
}

std::optional<std::string> variant_marked_by(const matrices::Framework& fw, std::string_view n) {
  if (n == specs::normalize_name(fw.main_package)) return std::nullopt;
  std::optional<std::string> found;
  for (const auto& v : fw.variants) {
    if (!variant_set(fw, v).count(std::string(n))) continue;
    if (found) return std::nullopt; // in two sets (jaxlib): marks none
    found = v.name;
  }
  return found;
}

std::vector<std::string> gpu_markers(const matrices::Framework& fw) {
  std::vector<std::string> out;
  for (const auto& v : fw.variants) {
    if (v.kind == "cpu") continue;
    for (const auto& p : variant_set(fw, v))
      if (variant_marked_by(fw, p) == v.name) out.push_back(p);
  }
  return out;
}

std::optional<std::string> variant_by_absence(const matrices::Framework& fw, const std::set<std::string>& installed_names) {
  const matrices::Variant* cpu = nullptr;
  for (const auto& v : fw.variants) {
    if (v.kind == "cpu") {
      cpu = &v;
      continue;
    }
    bool has_marker = false;
    for (const auto& p : variant_set(fw, v)) {
      if (variant_marked_by(fw, p) != v.name) continue;
      has_marker = true;
      if (installed_names.count(p)) return std::nullopt; // a GPU variant's package is there
    }
    if (!has_marker) return std::nullopt; // absence says nothing about this variant
  }
  if (!cpu) return std::nullopt;
  return cpu->name;
}

std::vector<specs::Requirement> extra_requirements(const probe::InstalledDist& d, const std::string& extra,
                                                   const specs::MarkerEnvironment& env) {
  std::vector<specs::Requirement> out;
  for (const auto& r : d.requires_dist)
    if (r.marker && r.applies(env, {extra}) && !r.applies(env)) out.push_back(r);
  return out;
}

bool is_cuda_compiler_wheel(std::string_view normalized) {
  return normalized.starts_with("nvidia-cuda-nvcc") || normalized.starts_with("nvidia-nvvm");
}

std::vector<specs::Requirement> missing_for_extra(const probe::InstalledDist& main, const std::string& extra,
                                                  const std::vector<probe::InstalledDist>& installed,
                                                  const specs::MarkerEnvironment& env) {
  std::vector<specs::Requirement> missing;
  std::set<std::string> seen_missing;
  std::set<std::pair<std::string, std::string>> visited; // (dist, extra)
  std::deque<std::pair<const probe::InstalledDist*, std::string>> todo{{&main, extra}};
  while (!todo.empty()) {
    auto [d, x] = todo.front();
    todo.pop_front();
    if (!visited.insert({d->normalized_name(), x}).second) continue;
    // "" stands for a reached dist's own unconditional requirements (jax-cuda13-plugin → jax-cuda13-pjrt).
    std::vector<specs::Requirement> reqs;
    if (!x.empty())
      reqs = extra_requirements(*d, x, env);
    else
      for (const auto& r : d->requires_dist)
        if (r.applies(env)) reqs.push_back(r);
    for (auto& r : reqs) {
      const auto* dep = find_dist(installed, r.normalized_name());
      if (!dep) {
        if (seen_missing.insert(r.normalized_name()).second) missing.push_back(std::move(r));
        continue;
      }
      if (dep != &main) todo.emplace_back(dep, std::string());
      for (const auto& e : r.extras) todo.emplace_back(dep, e);
    }
  }
  return missing;
}

Expected<InstalledFramework> installed_framework(const std::string& asked, bool detect, const matrices::Knowledge& k,
                                                 const std::vector<probe::InstalledDist>& installed, const std::string& python) {
  auto choice = choose_frameworks(asked, detect, &k, installed);
  InstalledFramework out{k.framework(choice.names.front()), "", choice.note};
  if (!out.framework)
    return make_error(ErrorCode::invalid_input, util::msg("--framework {}: not in the matrices", choice.names.front()));
  const std::string main = specs::normalize_name(out.framework->main_package);
  const auto d = std::find_if(installed.begin(), installed.end(), [&](const auto& x) { return x.normalized_name() == main; });
  if (d == installed.end())
    return make_error(ErrorCode::not_found, util::msg("{} is not installed in {}", out.framework->main_package, python),
                      util::msg("install it first: envfix apply {}", main));
  out.main_local = d->local();
  return out;
}

} // namespace envfix::resolver
