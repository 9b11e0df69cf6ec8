#include "probe/installed_kernels.hpp"

#include <algorithm>
#include <ctime>
#include <optional>
#include <sys/stat.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "probe/installed.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

namespace envfix::probe {

Expected<InstalledKernels> read_installed_kernels(const InstalledDist& dist, const wheel::EvidenceStore* store,
                                                  unsigned threads) {
  InstalledKernels out;
  auto sos = ENVFIX_TRY(installed_shared_objects(dist));
  out.scanned = sos.size();
  // The RECORD hash names the content only while the file is the size RECORD says.
  std::vector<wheel::ProfileSource> sources;
  for (const auto& o : sos) {
    struct stat st = {};
    const bool same_size =
        o.record.size && ::stat(o.path.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == *o.record.size;
    sources.push_back({o.path.string(), same_size ? o.record.hash_field() : std::string()});
  }
  auto read = wheel::read_profiles(sources, store, threads);
  for (std::size_t i = 0; i < sos.size(); ++i) {
    auto& p = read[i].profile;
    if (!p) {
      out.notes.push_back(util::msg("{}: {}", sos[i].path.string(), p.error().said_message()));
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

std::optional<std::string> record_sha256(const InstalledDist& dist) {
  auto record = util::read_file(dist.dist_info / "RECORD");
  if (!record) return std::nullopt;
  return util::sha256_hex(*record);
}

std::optional<wheel::RunObservation> run_observation(const InstalledDist& dist, const GpuInfo& gpu, bool ran, std::string step,
                                                     std::string error, std::string by) {
  auto record = record_sha256(dist);
  if (!record) return std::nullopt;
  return wheel::RunObservation{installed_build_key(dist),
                               std::move(*record),
                               gpu.cc,
                               gpu.name,
                               ran,
                               std::move(step),
                               std::move(error),
                               fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr))),
                               std::move(by)};
}

} // namespace envfix::probe
