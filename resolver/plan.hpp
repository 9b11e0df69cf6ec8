#pragma once
// The Plan: what to install, remove and keep to go from the installed set to a resolution
// (docs/architecture.md, Pipeline; docs/json.md "plan"). Pure data; cli/ renders it, installer/
// executes it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "resolver/rejection.hpp"
#include "resolver/resolver.hpp"
#include "specs/requirement.hpp"
#include "specs/version.hpp"

namespace envfix::resolver {

// One installed distribution as the resolver needs it (the CLI fills it from probe::InstalledDist).
struct InstalledPackage {
  std::string name; // normalized
  specs::Version version;
  std::vector<specs::Requirement> requires_dist;
  std::string conda;               // the conda package that owns it ("pytorch 2.5.1 cuda129_…"); "" when conda does not
  std::filesystem::path dist_info; // the installed dist itself: what removing it removes
};

struct PlanInstall {
  std::string name;
  std::string version;
  std::string filename;
  std::string url;
  std::optional<std::string> sha256;
  std::optional<std::uint64_t> size;
  std::string replaces;                 // installed version it replaces, "" when new
  std::vector<std::string> required_by; // for a replacement: who forces the change ("pkg==1.0", "<request>")
};

// Why the plan removes an installed distribution (docs/json.md, plan `remove[].why`).
enum class RemoveReason { replaced, companion_inconsistent, duplicate, unused_cuda_runtime };
[[nodiscard]] std::string_view to_string(RemoveReason r); // "replaced", "companion-inconsistent", …

// One installed distribution the plan removes: the dist itself travels to the transaction, which
// removes exactly that dist-info, never a namesake found again by name and version.
struct PlanRemove {
  std::string name;
  specs::Version version;
  RemoveReason why = RemoveReason::replaced;
  std::string conda;               // the conda package that owns it (InstalledPackage::conda), "" when none
  std::filesystem::path dist_info; // InstalledPackage::dist_info
  [[nodiscard]] static PlanRemove of(const InstalledPackage& p, RemoveReason why) {
    return {p.name, p.version, why, p.conda, p.dist_info};
  }
};

struct Plan {
  std::string channel; // "" for a plain (non-framework) resolution
  std::string index;
  std::string variant;
  util::Message why; // why this set (its id: util/message.hpp)
  std::vector<PlanInstall> install;
  std::vector<PlanRemove> remove;
  std::vector<std::string> keep; // "name==version" already installed and part of the set
  std::vector<Rejection> rejected;
  std::vector<util::Message> warnings;
  // A CPU set that replaces a GPU set: what the GPU packages it removes or replaces (a +cuXXX or
  // +rocm build, an nvidia-* library) take installed, by their RECORD sizes, and how many they are.
  struct GpuSetReplaced {
    std::uint64_t bytes = 0;
    std::size_t packages = 0;
  };
  std::optional<GpuSetReplaced> gpu_set_replaced;
  [[nodiscard]] std::uint64_t download_size() const;
  [[nodiscard]] bool empty() const { return install.empty() && remove.empty(); }
};

struct PlanInputs {
  const Resolution* resolution = nullptr;
  std::vector<InstalledPackage> installed;                      // may hold duplicates of a name (stray dist-infos)
  std::vector<std::string> framework_packages;                  // every package of the framework family (torch, torchvision, …)
  std::vector<std::string> cuda_runtime_prefixes = {"nvidia-"}; // CUDA runtime wheels of a variant
  bool reinstall = false; // a pin at the installed version is installed again (replaces it), not kept
  // A pin at the installed version that is another build than the installed one, which it must
  // replace (resolver/evidence.hpp InstalledBuilds::replaces): a build is its files, not its name
  // and version. Unset: none is.
  std::function<bool(const Pin&)> replaces_installed;
};

[[nodiscard]] Plan make_plan(const PlanInputs& in);

} // namespace envfix::resolver
