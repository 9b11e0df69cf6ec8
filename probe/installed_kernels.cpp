#include "probe/installed_kernels.hpp"

#include <algorithm>
#include <optional>
#include <sys/stat.h>

#include <fmt/format.h>

#include "probe/installed.hpp"
#include "util/parallel.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::probe {

Expected<InstalledKernels> read_installed_kernels(const InstalledDist& dist, const wheel::EvidenceStore* store,
                                                  unsigned threads) {
  InstalledKernels out;
  auto sos = ENVFIX_TRY(installed_shared_objects(dist));
  out.scanned = sos.size();
  threads = std::max(1u, threads);
  const std::size_t window = std::clamp<std::size_t>((std::size_t{128} << 20) / threads, std::size_t{4} << 20,
                                                     std::size_t{32} << 20);
  std::vector<std::optional<Expected<wheel::KernelProfile>>> read(sos.size());
  std::vector<char> cached(sos.size(), 0);
  (void)util::parallel_for(sos.size(), threads, [&](std::size_t i) -> Expected<void> {
    const auto& o = sos[i];
    // The RECORD hash names the content only while the file is the size RECORD says.
    struct stat st{};
    const bool same_size = o.record.size && ::stat(o.path.c_str(), &st) == 0 &&
                           static_cast<std::uint64_t>(st.st_size) == *o.record.size;
    if (store && same_size && !o.record.hash.empty())
      if (auto p = store->file(o.record.hash)) {
        read[i] = std::move(*p);
        cached[i] = 1;
        return {};
      }
    auto ks = wheel::read_kernels_file(o.path, window);
    if (!ks) read[i] = std::unexpected(std::move(ks.error()));
    else {
      read[i] = wheel::KernelProfile::of(*ks);
      if (store && same_size && !o.record.hash.empty()) (void)store->put_file(o.record.hash, **read[i]);
    }
    return {};
  });
  for (std::size_t i = 0; i < sos.size(); ++i) {
    auto& p = *read[i];
    if (!p) {
      out.notes.push_back(fmt::format("{}: {}", sos[i].path.string(), p.error().message));
      continue;
    }
    out.from_evidence += cached[i];
    if (!p->empty()) out.files.push_back({sos[i].record.path, std::move(*p)});
  }
  return out;
}

wheel::BuildKey installed_build_key(const InstalledDist& dist) {
  return {dist.normalized_name(), dist.version.to_string(), dist.local(), wheel::platform_key(installed_platform_tags(dist))};
}

} // namespace envfix::probe
