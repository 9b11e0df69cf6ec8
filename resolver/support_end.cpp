// The legacy ladder's wording (resolver/framework_selector.hpp, last_release_note).
#include <fmt/format.h>

#include "resolver/framework_selector.hpp"

namespace envfix::resolver {

util::Message last_release_note(const FrameworkSpec& spec, const specs::Version& version,
                                const std::vector<specs::ComputeCapability>& gpus, bool newest) {
  specs::Version pub = version.public_version();
  std::string archs;
  const SupportEndInfo* end = nullptr;
  for (const auto& cc : gpus)
    for (const auto& e : spec.support_ends)
      if (cc < e.below && pub.base_version() < e.from.base_version()) { // 2.15.0.devN is of the 2.15 line
        if (archs.find(cc.sm_name()) == std::string::npos) archs += (archs.empty() ? "" : ", ") + cc.sm_name();
        if (!end || e.from < end->from) end = &e;
      }
  if (!end) return {};
  // Unpinned, the selector takes the newest build that covers every GPU: the newest the index has for
  // them, and with the announced end the last there will be.
  const auto dropped = end->variant.empty() ? util::msg("{} {} and later dropped {} ({})", spec.main_package,
                                                        end->from.to_string(), archs, end->source)
                                            : util::msg("{} {} and later dropped {} and with it {} ({})", spec.main_package,
                                                        end->from.to_string(), end->variant, archs, end->source);
  if (newest)
    return util::msg("{} {} is the last release with code for {}: {}", spec.main_package, version.to_string(), archs, dropped);
  return util::msg("{} {} has code for {}; {}", spec.main_package, version.to_string(), archs, dropped);
}

} // namespace envfix::resolver
