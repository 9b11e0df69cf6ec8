#include "probe/installed_kernels.hpp"

#include <fmt/format.h>

#include "probe/installed.hpp"

namespace envfix::probe {

Expected<InstalledKernels> read_installed_kernels(const InstalledDist& dist) {
  InstalledKernels out;
  auto sos = ENVFIX_TRY(installed_shared_objects(dist));
  for (const auto& so : sos) {
    ++out.scanned;
    auto ks = wheel::read_kernels_file(so);
    if (!ks) {
      out.notes.push_back(fmt::format("{}: {}", so.string(), ks.error().message));
      continue;
    }
    if (!ks->empty()) out.files.emplace_back(so, std::move(*ks));
  }
  return out;
}

} // namespace envfix::probe
