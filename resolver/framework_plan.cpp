#include "resolver/framework_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "index/candidate.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"
#include "wheel/record.hpp"

namespace envfix::resolver {

namespace {

// What a dist takes installed: the sizes its RECORD lists (0 when it cannot be read).
std::uint64_t installed_bytes(const std::filesystem::path& dist_info) {
  auto text = util::read_file(dist_info / "RECORD");
  if (!text) return 0;
  auto record = wheel::Record::parse(*text, dist_info.string(), wheel::RecordSource::installed);
  if (!record) return 0;
  std::uint64_t n = 0;
  for (const auto& e : record->entries) n += e.size.value_or(0);
  return n;
}

bool gpu_build(const InstalledPackage& p) {
  const auto local = p.version.local();
  return p.name.starts_with("nvidia-") || local.starts_with("cu") || local.starts_with("rocm");
}

// The GPU packages a CPU set removes or replaces (Plan::gpu_set_replaced); nullopt when there are none.
std::optional<Plan::GpuSetReplaced> gpu_set_replaced(const Plan& plan, const std::vector<InstalledPackage>& installed) {
  Plan::GpuSetReplaced out;
  for (const auto& p : installed) {
    const bool removed =
        std::any_of(plan.remove.begin(), plan.remove.end(), [&](const PlanRemove& r) { return r.dist_info == p.dist_info; });
    const bool replaced = std::any_of(plan.install.begin(), plan.install.end(),
                                      [&](const PlanInstall& i) { return i.name == p.name && !i.replaces.empty(); });
    if ((removed || replaced) && gpu_build(p)) {
      out.bytes += installed_bytes(p.dist_info);
      ++out.packages;
    }
  }
  return out.packages ? std::optional(out) : std::nullopt;
}

} // namespace

// The plan of the selector's choice: its index, why, warnings and rejections.
Plan framework_plan(const FrameworkPlanInputs& fin) {
  const auto& choice = *fin.choice;
  const auto& spec = *fin.spec;
  auto plan = make_plan(
      {&choice.resolution, fin.installed, framework_packages(spec), {"nvidia-"}, fin.reinstall, fin.replaces_installed});
  plan.channel = choice.index.channel;
  plan.variant = choice.index.variant;
  plan.index = index::redact_url(choice.index.url);
  plan.why = choice.why;
  plan.warnings.insert(plan.warnings.begin(), choice.warnings.begin(), choice.warnings.end()); // then make_plan's (yanked pins)
  if (!fin.note.empty()) plan.warnings.insert(plan.warnings.begin(), fin.note);
  if (choice.index.variant.empty() && fin.has_gpus) {
    // An --index-url whose variant nothing names (indexes_for_url): no CUDA to check the driver
    // against, no arch data; the kernel check after download decides.
    const auto* m = choice.resolution.find(specs::normalize_name(spec.main_package));
    plan.why = util::msg("{} {} from {}, variant unknown: its kernels are checked after download", spec.main_package,
                         m ? m->version.to_string() : "", index::redact_url(choice.index.url));
    plan.warnings.push_back(util::msg("the variant of {} is unknown (no local label on the {} files, no --variant): the "
                                      "driver is not checked against its CUDA, its kernels are checked after download",
                                      index::redact_url(choice.index.url), spec.main_package));
  }
  plan.rejected.insert(plan.rejected.begin(), choice.rejected.begin(), choice.rejected.end());
  if (!choice.index.cuda) plan.gpu_set_replaced = gpu_set_replaced(plan, fin.installed);
  return plan;
}

// The selector's error, unless every index answered 404 for the main package.
Error selection_error(Error selector, const FrameworkSpec& spec,
                      const std::map<std::string, std::unique_ptr<IndexProvider>>& providers) {
  const auto main = specs::normalize_name(spec.main_package);
  std::vector<std::string> urls;
  for (const auto& [url, p] : providers) {
    auto it = p->missing_pages().find(main);
    if (it == p->missing_pages().end()) return selector;
    urls.push_back(it->second.message);
  }
  if (providers.empty()) return selector;
  if (std::ranges::all_of(providers, [](const auto& p) { return p.second->offline(); }))
    return Error::made(ErrorCode::not_found,
                       util::msg("offline: the cache holds no page of {} from any index envfix would read", spec.main_package),
                       util::plains(urls),
                       util::msg("run the same command once without --offline (it caches every page it reads), or use "
                                 "--find-links with local wheels"));
  return Error::made(
      ErrorCode::not_found, util::msg("no index holds {}: every index envfix tried answered HTTP 404", spec.main_package),
      util::plains(urls),
      util::msg("check --mirror / ENVFIX_MIRROR (it replaces the base URL of every index template) or --index-url"));
}

} // namespace envfix::resolver
