// A lock target from a resolution (see lock_target.hpp).
#include "fetch/lock_target.hpp"

#include <fmt/format.h>

#include "lockfile/target.hpp"
#include "resolver/installed.hpp"
#include "specs/name.hpp"

namespace envfix::fetch {

lockfile::LockedHost locked_host(const TargetInputs& in) {
  lockfile::LockedHost lh;
  for (const auto& cc : in.gpus) lh.gpus.push_back(cc.sm_name());
  lh.python = in.python_mm;
  if (!in.platform_tag.empty()) {
    lh.platform = in.platform_tag;
  } else {
    std::vector<std::string> files;
    for (const auto& pin : in.resolution->pins) files.push_back(pin.file.filename);
    lh.platform = lockfile::set_platform(files, in.arch);
  }
  if (in.knowledge && in.framework_index && in.framework_index->cuda && !in.gpus.empty())
    lh.driver_min = in.knowledge->set_driver_floor(*in.framework_index->cuda, in.driver).value_or("");
  return lh;
}

std::map<std::string, lockfile::LockedKernels> claimed_kernels(const TargetInputs& in) {
  std::map<std::string, lockfile::LockedKernels> out;
  if (!in.spec || !in.knowledge || !in.framework_index) return out;
  const auto* pin = in.resolution->find(specs::normalize_name(in.spec->main_package));
  if (!pin) return out;
  for (const auto& vb : in.knowledge->variants_for(in.spec->name, pin->version, in.platform)) {
    if (vb.variant != in.framework_index->variant || (!vb.sass && !vb.ptx)) continue;
    lockfile::LockedKernels k;
    std::set<specs::GpuArch> sass, ptx;
    if (vb.sass) sass.insert(vb.sass->begin(), vb.sass->end());
    if (vb.ptx) ptx.insert(vb.ptx->begin(), vb.ptx->end());
    for (const auto& a : sass) k.sass.push_back(a.to_string());
    for (const auto& a : ptx) k.ptx.push_back(a.to_string());
    k.verified = false;
    out[pin->name] = std::move(k);
  }
  return out;
}

std::map<std::string, lockfile::LockedKernels> kernels_read(const installer::KernelGate& gate) {
  std::map<std::string, lockfile::LockedKernels> out;
  for (const auto& r : gate.reports()) {
    if (r.files.empty()) continue;
    out[r.package.name] = {r.sass(), r.ptx(), true};
  }
  return out;
}

namespace {

// "installed by conda; not served by URL": a pin kept as installed has no file to lock (docs/lockfile.md).
lockfile::InstalledOnly installed_only(const resolver::Pin& pin, const TargetInputs& in, const std::string& index) {
  std::string by;
  if (in.installed)
    for (const auto& d : *in.installed)
      if (d.normalized_name() == pin.name) by = d.conda ? "conda" : d.installer;
  return {pin.name, pin.version.to_string(), fmt::format("installed{}; not served by {}", by.empty() ? "" : " by " + by, index)};
}

} // namespace

Expected<lockfile::LockTarget> lock_target(const TargetInputs& in, const std::map<std::string, lockfile::LockedKernels>& kernels,
                                           const std::map<std::string, LocalFile>& local) {
  lockfile::LockTarget t;
  t.host = locked_host(in);
  t.id = lockfile::make_target_id(t.host);
  t.channel = in.channel;
  t.index = lockfile::strip_credentials(in.framework_index ? in.framework_index->url : in.index);
  t.variant = in.variant;
  for (const auto& pin : in.resolution->pins) {
    if (resolver::is_installed_candidate(pin.file)) {
      t.installed_only.push_back(installed_only(pin, in, t.index));
      continue;
    }
    lockfile::LockedPackage p;
    p.name = pin.name;
    p.version = pin.version.to_string();
    p.filename = pin.file.filename;
    p.url = lockfile::strip_credentials(pin.file.url);
    auto lf = local.find(pin.name);
    if (pin.file.sha256)
      p.sha256 = *pin.file.sha256;
    else if (lf != local.end())
      p.sha256 = lf->second.sha256;
    else
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("{}=={}: the index gives no sha256 for {}; a lockfile needs one", pin.name, p.version, p.filename),
          "use an index that publishes hashes, or `envfix apply` (it hashes what it downloads)");
    if (pin.file.size)
      p.size = *pin.file.size;
    else if (lf != local.end() && lf->second.size > 0)
      p.size = lf->second.size;
    if (auto k = kernels.find(pin.name); k != kernels.end()) p.kernels = k->second;
    t.packages.push_back(std::move(p));
  }
  return t;
}

} // namespace envfix::fetch
