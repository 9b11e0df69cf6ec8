#pragma once
// What is installed, as the resolver sees it (docs/architecture.md, Choosing the framework set):
// - PreferInstalledProvider: an installed distribution that satisfies every requirement on it stays,
//   as pip and uv keep it ("Requirement already satisfied"), even when the index does not hold its
//   version; packages outside `upgrade` (the framework family, the request with --upgrade) change
//   only when a requirement forces it.
// - check_environment: pip check's rule (https://pip.pypa.io/en/stable/cli/pip_check/) applied to
//   the environment as it will be after a plan, before anything changes.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "resolver/candidate_provider.hpp"
#include "probe/host_facts.hpp"
#include "resolver/plan.hpp"
#include "specs/marker.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

// The URL scheme of a candidate that stands for an installed distribution (no file, nothing to fetch).
inline constexpr std::string_view kInstalledScheme = "installed:";
[[nodiscard]] inline bool is_installed_candidate(const index::Candidate& c) { return c.url.starts_with(kInstalledScheme); }

// The probed distributions as the resolver needs them; one conda owns is described as conda does
// ("pytorch 2.5.1 cuda129_…", or "… (INSTALLER conda)" without conda's record).
[[nodiscard]] std::vector<InstalledPackage> installed_packages(const std::vector<probe::InstalledDist>& dists);

class PreferInstalledProvider final : public CandidateProvider {
public:
  // `upgrade`: normalized names that get the best candidate whatever is installed. `from_index`: names
  // whose installed distribution is no candidate of its own: they come from the index, at the installed
  // version first when the index holds it (--reinstall: every name; a GPU extension whose installed
  // binaries were read, so that the index's file meets the evidence veto).
  PreferInstalledProvider(CandidateProvider& inner, const std::vector<InstalledPackage>& installed, std::set<std::string> upgrade,
                          std::set<std::string> from_index = {});

  [[nodiscard]] Expected<std::vector<index::Candidate>> candidates(const std::string& project) override;
  [[nodiscard]] Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) override;
  [[nodiscard]] std::string describe() const override { return m_inner.describe(); }
  void prefetch_candidates(std::span<const std::string> projects) override { m_inner.prefetch_candidates(projects); }
  void prefetch_metadata(std::span<const index::Candidate> files) override;
  [[nodiscard]] Expected<void> complete_hash(index::Candidate& file) override;
  [[nodiscard]] std::optional<specs::Version> preferred_version(const std::string& project) override;
  [[nodiscard]] std::string missing_detail(const std::string& project) const override { return m_inner.missing_detail(project); }
  [[nodiscard]] bool lacks_project(const std::string& project) const override { return m_inner.lacks_project(project); }
  [[nodiscard]] bool widen(const std::string& project) override { return m_inner.widen(project); }

private:
  CandidateProvider& m_inner;
  std::map<std::string, InstalledPackage> m_installed; // the newest dist of each name
  std::set<std::string> m_upgrade;
  std::set<std::string> m_from_index;
};

// One requirement of an installed (or planned) distribution the environment would not satisfy.
struct BrokenRequirement {
  std::string package;     // "pydantic==2.13.4"
  std::string requirement; // "typing-extensions>=4.14.1"
  std::string problem;     // "typing-extensions 4.12.2 would be installed", "typing-extensions would be removed"
};

// Every requirement (markers evaluated for `env`, no extras) of every distribution present after
// `plan` that the after-state breaks although the current state satisfied it. Pure.
[[nodiscard]] std::vector<BrokenRequirement> check_environment(const std::vector<InstalledPackage>& installed, const Plan& plan,
                                                               const specs::MarkerEnvironment& env);

// What `plan` would remove or overwrite of the packages conda owns: "torch 2.5.1 (conda package
// pytorch 2.5.1 cuda129_…)". conda keeps its own records; a pip-style change behind its back leaves
// conda-meta describing files that are gone. Pure.
[[nodiscard]] std::vector<std::string> conda_owned_changes(const Plan& plan);

// A plan that removes or overwrites a package conda owns is refused (naming it, with the conda way as
// hint) unless allow_conda_overwrite; then each is a warning in plan.warnings.
[[nodiscard]] Expected<void> check_conda(Plan& plan, bool allow_conda_overwrite);

// pip check over the environment as it will be after the plan (check_environment): an error naming
// each installed package and the requirement the plan would break, unless allow_breaking (then the
// broken requirements come back, and are warnings in plan.warnings too).
[[nodiscard]] Expected<std::vector<std::string>> check_breaking(const std::vector<InstalledPackage>& installed, Plan& plan,
                                                                const specs::MarkerEnvironment& env, bool allow_breaking);

} // namespace envfix::resolver
