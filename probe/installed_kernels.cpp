#include "probe/installed_kernels.hpp"

#include <algorithm>
#include <optional>
#include <sys/stat.h>

#include <fmt/format.h>

#include "probe/installed.hpp"

namespace envfix::probe {

Expected<InstalledKernels> read_installed_kernels(const InstalledDist& dist, const wheel::EvidenceStore* store,
                                                  unsigned threads) {
  InstalledKernels out;
  auto sos = ENVFIX_TRY(installed_shared_objects(dist));
  out.scanned = sos.size();
  // The RECORD hash names the content only while the file is the size RECORD says.
  std::vector<wheel::ProfileSource> sources;
  for (const auto& o : sos) {
    struct stat st{};
    const bool same_size = o.record.size && ::stat(o.path.c_str(), &st) == 0 &&
                           static_cast<std::uint64_t>(st.st_size) == *o.record.size;
    sources.push_back({o.path.string(), same_size ? o.record.hash : std::string()});
  }
  auto read = wheel::read_profiles(sources, store, threads);
  for (std::size_t i = 0; i < sos.size(); ++i) {
    auto& p = read[i].profile;
    if (!p) {
      out.notes.push_back(fmt::format("{}: {}", sos[i].path.string(), p.error().message));
      continue;
    }
    out.from_evidence += read[i].from_store ? 1 : 0;
    if (!p->empty()) out.files.push_back({sos[i].record.path, std::move(*p)});
  }
  return out;
}

wheel::BuildKey installed_build_key(const InstalledDist& dist) {
  return {dist.normalized_name(), dist.version.to_string(), dist.local(), wheel::platform_key(installed_platform_tags(dist))};
}

} // namespace envfix::probe
