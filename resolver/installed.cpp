#include "resolver/installed.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "specs/name.hpp"

namespace envfix::resolver {

PreferInstalledProvider::PreferInstalledProvider(CandidateProvider& inner, const std::vector<InstalledPackage>& installed,
                                                 std::set<std::string> upgrade, std::set<std::string> from_index)
    : m_inner(inner), m_upgrade(std::move(upgrade)), m_from_index(std::move(from_index)) {
  for (const auto& p : installed) {
    auto it = m_installed.find(p.name);
    if (it == m_installed.end() || it->second.version < p.version) m_installed[p.name] = p;
  }
}

std::optional<specs::Version> PreferInstalledProvider::preferred_version(const std::string& project) {
  if (m_upgrade.contains(project)) return std::nullopt;
  auto it = m_installed.find(project);
  if (it == m_installed.end()) return std::nullopt;
  return it->second.version;
}

Expected<std::vector<index::Candidate>> PreferInstalledProvider::candidates(const std::string& project) {
  auto files = ENVFIX_TRY(m_inner.candidates(project));
  auto pv = preferred_version(project);
  if (!pv || m_from_index.contains(project)) return files;
  // The installed distribution is a candidate of its own, so that it can stay when the index does not
  // hold its version (a mirror with an older typing-extensions). A wheel name with the tags every
  // interpreter supports lets it through the same classification as the index's files.
  std::string stem = specs::normalize_name(project);
  std::replace(stem.begin(), stem.end(), '-', '_');
  index::Candidate c;
  c.project = project;
  c.filename = fmt::format("{}-{}-py3-none-any.whl", stem, pv->to_string());
  c.url = fmt::format("{}{}=={}", kInstalledScheme, project, pv->to_string());
  c.index_url = "installed";
  files.push_back(std::move(c));
  return files;
}

Expected<specs::CoreMetadata> PreferInstalledProvider::metadata(const index::Candidate& candidate) {
  if (!is_installed_candidate(candidate)) return m_inner.metadata(candidate);
  const auto& p = m_installed.at(candidate.project);
  specs::CoreMetadata md;
  md.metadata_version = "2.1";
  md.name = p.name;
  md.version = p.version;
  md.requires_dist = p.requires_dist;
  return md;
}

void PreferInstalledProvider::prefetch_metadata(std::span<const index::Candidate> files) {
  std::vector<index::Candidate> real;
  for (const auto& f : files)
    if (!is_installed_candidate(f)) real.push_back(f);
  if (!real.empty()) m_inner.prefetch_metadata(real);
}

Expected<void> PreferInstalledProvider::complete_hash(index::Candidate& file) {
  if (is_installed_candidate(file)) return {};
  return m_inner.complete_hash(file);
}

namespace {

bool satisfied(const specs::Requirement& r, const std::map<std::string, specs::Version>& state) {
  auto it = state.find(r.normalized_name());
  // pip check: pre-releases count (packaging's `contains(version, prereleases=True)`).
  return it != state.end() && r.specifier.contains(it->second, true);
}

} // namespace

std::vector<BrokenRequirement> check_environment(const std::vector<InstalledPackage>& installed, const Plan& plan,
                                                 const specs::MarkerEnvironment& env) {
  std::map<std::string, specs::Version> before, after;
  std::map<std::string, const std::vector<specs::Requirement>*> deps_after;
  for (const auto& p : installed) before[p.name] = p.version;
  std::set<std::string> removed;
  for (const auto& r : plan.remove) removed.insert(r.name);
  for (const auto& p : installed)
    if (!removed.contains(p.name)) {
      after[p.name] = p.version;
      deps_after[p.name] = &p.requires_dist;
    }
  for (const auto& i : plan.install)
    if (auto v = specs::Version::parse(i.version)) after[i.name] = *v;
  std::vector<BrokenRequirement> out;
  for (const auto& [name, deps] : deps_after) {
    // A distribution the plan replaces brings its own requirements, which the resolver satisfied.
    if (std::any_of(plan.install.begin(), plan.install.end(), [&](const PlanInstall& i) { return i.name == name; })) continue;
    for (const auto& r : *deps) {
      if (!r.applies(env)) continue;
      if (satisfied(r, after) || !satisfied(r, before)) continue; // only what this plan breaks
      std::string dep = r.normalized_name();
      std::string problem = after.contains(dep) ? fmt::format("{} {} would be installed", dep, after.at(dep).to_string())
                                                : fmt::format("{} would be removed", dep);
      out.push_back({fmt::format("{}=={}", name, after.at(name).to_string()), r.to_string(), std::move(problem)});
    }
  }
  return out;
}

std::vector<std::string> conda_owned_changes(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& r : plan.remove)
    if (!r.conda.empty()) out.push_back(fmt::format("{} {} (conda package {})", r.name, r.version.to_string(), r.conda));
  return out;
}

Expected<void> check_conda(Plan& plan, bool allow_conda_overwrite) {
  // conda's packages are left to conda (docs/json.md, plan).
  if (auto owned = conda_owned_changes(plan); !owned.empty()) {
    if (!allow_conda_overwrite) {
      Error e{ErrorCode::invalid_input, "", owned, ""};
      e.say(owned.size() == 1
                ? util::msg("the plan would remove or overwrite 1 package conda owns: {}", owned.front())
                : util::msg("the plan would remove or overwrite {} packages conda owns: {}", owned.size(), owned.front()));
      e.advise(util::msg("change it the conda way (`conda install` the build you need, e.g. `conda install pytorch "
                         "pytorch-cuda=12.4 -c pytorch -c nvidia`, or `conda remove` it first and run envfix again), or pass "
                         "--allow-conda-overwrite to replace it anyway (conda-meta will then describe files that are gone); "
                         "nothing was changed"));
      return std::unexpected(std::move(e));
    }
    for (const auto& o : owned) plan.warnings.push_back(util::msg("--allow-conda-overwrite: replacing {}", o));
  }
  return {};
}

Expected<std::vector<std::string>> check_breaking(const std::vector<InstalledPackage>& installed, Plan& plan,
                                                  const specs::MarkerEnvironment& env, bool allow_breaking) {
  auto broken = check_environment(installed, plan, env);
  std::vector<std::string> lines;
  for (const auto& b : broken) lines.push_back(fmt::format("{} requires {}, but {}", b.package, b.requirement, b.problem));
  if (lines.empty()) return lines;
  if (!allow_breaking) {
    Error e{ErrorCode::unsatisfiable, "", {}, ""};
    e.say(lines.size() == 1 ? util::msg("the plan would break 1 installed package: {}", lines.front())
                            : util::msg("the plan would break {} installed packages: {}", lines.size(), lines.front()));
    e.advise(util::msg("pin what the installed package needs (e.g. add its requirement to the request), use an index that "
                       "holds it, or pass --allow-breaking to go ahead anyway; nothing was changed"));
    e.causes = lines;
    return std::unexpected(std::move(e));
  }
  for (const auto& l : lines) plan.warnings.push_back(util::msg("--allow-breaking: {}", l));
  return lines;
}

std::vector<InstalledPackage> installed_packages(const std::vector<probe::InstalledDist>& dists) {
  std::vector<InstalledPackage> out;
  for (const auto& d : dists) {
    InstalledPackage ip{d.normalized_name(), d.version, d.requires_dist, "", d.dist_info};
    if (d.conda)
      ip.conda = d.conda->build.empty() ? fmt::format("{} {} (INSTALLER conda)", d.conda->name, d.conda->version)
                                        : fmt::format("{} {} {}", d.conda->name, d.conda->version, d.conda->build);
    out.push_back(std::move(ip));
  }
  return out;
}

} // namespace envfix::resolver
