#pragma once
// From the selector's choice to the plan (resolver/framework_selector.hpp → resolver/plan.hpp): the
// diff against the installed set, with the choice's index, why, warnings and rejections; and what a
// failed selection means when every index answered 404 for the framework.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "resolver/framework_selector.hpp"
#include "resolver/index_provider.hpp"
#include "resolver/installed.hpp"
#include "resolver/plan.hpp"
#include "util/error.hpp"
#include "util/message.hpp"

namespace envfix::resolver {

struct FrameworkPlanInputs {
  const FrameworkChoice* choice = nullptr;
  const FrameworkSpec* spec = nullptr;
  std::vector<InstalledPackage> installed;
  util::Message note; // the framework choice's note (resolver/frameworks.hpp FrameworkTargets), first
  bool reinstall = false;
  bool has_gpus = false;                              // an index of unknown variant is then said to be checked after download
  std::function<bool(const Pin&)> replaces_installed; // PlanInputs::replaces_installed
};
[[nodiscard]] Plan framework_plan(const FrameworkPlanInputs& in);

// Every index answering 404 for the main package is a wrong URL (a --mirror without that tree), not
// "no build fits": that error, naming the URLs; else the selector's own.
[[nodiscard]] Error selection_error(Error selector, const FrameworkSpec& spec,
                                    const std::map<std::string, std::unique_ptr<IndexProvider>>& providers);

} // namespace envfix::resolver
