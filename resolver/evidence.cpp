#include "resolver/evidence.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "probe/installed_kernels.hpp"
#include "resolver/installed.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/fs.hpp"
#include "wheel/coverage.hpp"
#include "wheel/record.hpp"

namespace envfix::resolver {

std::vector<std::string> whole_set(const FrameworkSpec& spec) {
  auto out = framework_packages(spec);
  for (const auto& i : spec.indexes)
    for (const auto& k : i.kernels)
      if (auto n = specs::normalize_name(k); std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
  return out;
}

bool InstalledBuilds::replaces(const Pin& pin) const {
  return short_of_gpus.contains(pin.name) && !is_installed_candidate(pin.file) &&
         !(same_as_installed && same_as_installed(pin.file));
}

namespace {

// The installed builds read, by build key, with their RECORD; and per file URL whether it is one.
struct Installed {
  std::map<wheel::BuildKey, BuildFacts> facts;
  std::map<wheel::BuildKey, wheel::Record> records;
  std::map<std::string, bool> same; // file URL → same_build, asked once
  RecordReader wheel_record;

  // The installed facts for `key`, when `c` is that very build.
  std::optional<BuildFacts> of(const wheel::BuildKey& key, const index::Candidate& c) {
    auto it = facts.find(key);
    if (it == facts.end()) return std::nullopt;
    if (is_installed_candidate(c) || same_file(key, c)) return it->second;
    return std::nullopt;
  }
  bool same_file(const wheel::BuildKey& key, const index::Candidate& c) {
    if (auto s = same.find(c.url); s != same.end()) return s->second;
    bool is = false;
    if (auto rec = records.find(key); rec != records.end() && wheel_record)
      if (auto text = wheel_record(c))
        if (auto theirs = wheel::Record::parse(*text, c.filename)) is = wheel::same_build(rec->second, *theirs);
    same[c.url] = is;
    return is;
  }
};

bool covers_all(const std::vector<wheel::ProfiledFile>& files, const std::vector<specs::ComputeCapability>& gpus) {
  return std::all_of(gpus.begin(), gpus.end(), [&](const specs::ComputeCapability& cc) {
    auto pc = wheel::package_coverage(files, cc);
    return !pc.has_gpu_code() || pc.verdict == wheel::Verdict::full;
  });
}

} // namespace

InstalledBuilds attach_evidence(FrameworkSpec& spec, const std::vector<probe::InstalledDist>& installed_dists,
                                const std::vector<specs::ComputeCapability>& gpus, std::shared_ptr<wheel::EvidenceStore> store,
                                const std::vector<specs::Requirement>& request, unsigned threads, RecordReader wheel_record) {
  InstalledBuilds out;
  auto installed = std::make_shared<Installed>();
  installed->wheel_record = std::move(wheel_record);
  if (!gpus.empty()) {
    // The set's packages, and every one the request names (a GPU extension such as xformers): an
    // installed build whose binaries hold nothing for a GPU is never kept as "nothing to do".
    auto family = whole_set(spec);
    for (const auto& q : request) family.push_back(q.normalized_name());
    for (const auto& d : installed_dists) {
      if (std::find(family.begin(), family.end(), d.normalized_name()) == family.end()) continue;
      auto ik = probe::read_installed_kernels(d, store.get(), threads);
      if (!ik || ik->files.empty()) continue;
      auto key = probe::installed_build_key(d);
      BuildFacts facts{std::move(ik->files), fmt::format("installed in {}", d.dist_info.parent_path().string())};
      (void)store->put_build({key, facts.source, facts.files});
      if (!covers_all(facts.files, gpus)) out.short_of_gpus.insert(d.normalized_name());
      if (auto text = util::read_file(d.dist_info / "RECORD"))
        if (auto rec = wheel::Record::parse(*text, (d.dist_info / "RECORD").string(), wheel::RecordSource::installed))
          installed->records.emplace(key, std::move(*rec));
      installed->facts[key] = std::move(facts);
      out.read.insert(d.normalized_name());
    }
  }
  out.same_as_installed = [installed](const index::Candidate& c) {
    auto wf = specs::WheelFilename::parse(c.filename);
    if (!wf) return false;
    for (const auto& [key, rec] : installed->records)
      if (key.project == specs::normalize_name(wf->name) && key.version == wf->version.to_string() &&
          installed->same_file(key, c))
        return true;
    return false;
  };
  spec.evidence = [installed, store](const index::Candidate& c, const specs::WheelFilename& wf,
                                     std::string_view variant) -> std::optional<BuildFacts> {
    auto key = wheel::build_key(wf, variant);
    if (auto facts = installed->of(key, c)) return facts;
    if (c.sha256)
      if (auto e = store->build(*c.sha256); e && wheel::same_wheel(e->key, key))
        return BuildFacts{std::move(e->files), std::move(e->source)};
    // A file without a local label is the same build on whichever index lists it (jax-cuda13-pjrt
    // 0.11.2 names its variant in its project name): installed builds are keyed by the label alone.
    if (wf.version.has_local() || variant.empty()) return std::nullopt;
    key.variant.clear();
    return installed->of(key, c);
  };
  return out;
}

} // namespace envfix::resolver
