#include "resolver/framework_selector.hpp"

#include "resolver/user_limits.hpp"
#include "resolver/source_build.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "specs/name.hpp"
#include "util/strings.hpp"

namespace envfix::resolver {

namespace {

struct MainCandidate {
  ProjectFile file;
  std::size_t index_pos = 0; // position in the channel's index order (newest CUDA first)
  std::vector<util::Message> warnings;
  bool ptx_only = false; // some GPU runs it only through PTX JIT
  bool partial = false;  // its binaries cover some GPU only partly
  util::Message cover;   // why its kernels are believed to run, for the summary line
};

// The evidence of a build's binaries for every GPU: the first GPU no file runs on, or the GPUs
// covered only partly / only by PTX JIT.
struct EvidenceVerdict {
  std::optional<specs::ComputeCapability> none;
  wheel::PackageCoverage none_coverage;
  std::vector<specs::ComputeCapability> partial, jit_only;
};

EvidenceVerdict judge_evidence(const BuildFacts& facts, const std::vector<specs::ComputeCapability>& gpus) {
  EvidenceVerdict v;
  for (const auto& g : gpus) {
    auto pc = wheel::package_coverage(facts.files, g);
    if (!pc.has_gpu_code()) continue;
    if (pc.verdict == wheel::Verdict::none) {
      if (!v.none) {
        v.none = g;
        v.none_coverage = pc;
      }
    } else if (pc.verdict == wheel::Verdict::partial)
      v.partial.push_back(g);
    if (pc.jit_only) v.jit_only.push_back(g);
  }
  return v;
}

std::string arch_list(const std::vector<specs::GpuArch>& archs) {
  std::string s;
  for (const auto& a : archs) s += (s.empty() ? "" : " ") + a.to_string();
  return s.empty() ? "no kernels" : s;
}

std::string gpu_list(const std::vector<specs::ComputeCapability>& gpus) {
  std::string s;
  for (const auto& g : gpus) s += (s.empty() ? "" : ", ") + g.sm_name();
  return s;
}

// "sm_87 not covered", and for an integrated GPU the rule that makes it so: the SASS of a neighbour
// (sm_80 on an 8.7) does not load there (specs/gpu_arch.hpp, the Tegra rule).
util::Message not_covered(const std::vector<specs::ComputeCapability>& gpus) {
  bool tegra = std::any_of(gpus.begin(), gpus.end(), [](const specs::ComputeCapability& g) { return g.tegra; });
  if (tegra)
    return util::msg("{} not covered (an integrated GPU runs only SASS built for its exact arch, or PTX it can JIT)",
                     gpu_list(gpus));
  return util::msg("{} not covered", gpu_list(gpus));
}

std::string evidence_archs(const BuildFacts& facts) { return arch_list(wheel::archs_of(facts.files)); }

int cuda_rank(const FrameworkIndex& i) { return i.cuda ? i.cuda->major * 100 + i.cuda->minor : -1; }

const specs::Requirement* find_req(const std::vector<specs::Requirement>& rs, std::string_view name) {
  for (const auto& r : rs)
    if (r.normalized_name() == name) return &r;
  return nullptr;
}

} // namespace

CoverageVerdict check_coverage(const std::vector<specs::GpuArch>& archs, const std::vector<specs::ComputeCapability>& gpus) {
  CoverageVerdict v;
  for (const auto& g : gpus) {
    bool sass = false, ptx = false;
    for (const auto& a : archs) {
      if (!a.runs_on(g)) continue;
      if (a.kind == specs::GpuArch::Kind::sass) sass = true;
      if (a.kind == specs::GpuArch::Kind::ptx) ptx = true;
    }
    if (!sass && !ptx)
      v.uncovered.push_back(g);
    else if (!sass)
      v.ptx_only.push_back(g);
  }
  return v;
}

namespace {

// Can the driver run this CUDA natively (not only through minor-version compatibility)?
bool runs_natively(const HostTarget& host, const specs::CudaVersion& c) {
  if (host.driver_native) return host.driver_native(c);
  return !host.driver_supports || host.driver_supports(c);
}

std::string main_of(const FrameworkSpec& spec, const FrameworkIndex& idx) {
  return specs::normalize_name(idx.main_package.empty() ? spec.main_package : idx.main_package);
}

std::string join(const std::vector<std::string>& v) { return util::join(v, ", "); }

// A requested extra of the main package that names a variant (jax[cuda12]): it pins that variant.
std::string requested_variant_extra(const FrameworkSpec& spec, const specs::Requirement* main_req) {
  if (!main_req) return {};
  for (const auto& e : main_req->extras)
    for (const auto& i : spec.indexes)
      if (!i.extra.empty() && specs::normalize_name(i.extra) == specs::normalize_name(e)) return i.extra;
  return {};
}

// The packages that must be in a variant's resolved set for it to carry GPU kernels, beyond the main
// package and its companions (jax-cuda13-plugin, jax-cuda13-pjrt); empty when those carry them.
std::vector<std::string> set_kernel_packages(const FrameworkSpec& spec, const FrameworkIndex& idx) {
  std::vector<std::string> out;
  for (const auto& k : idx.kernels) {
    auto n = specs::normalize_name(k);
    bool own = n == main_of(spec, idx) || std::any_of(spec.companions.begin(), spec.companions.end(),
                                                      [&](const std::string& c) { return specs::normalize_name(c) == n; });
    if (!own) out.push_back(n);
  }
  return out;
}

std::vector<std::string> held(const Resolution& res, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names)
    if (const auto* pin = res.find(n)) out.push_back(n + " " + pin->version.to_string());
  return out;
}

// The state of one selection pass over the channels.
struct Pass {
  const FrameworkSpec& spec;
  const HostTarget& host;
  const FrameworkRequest& request;
  const ProviderFor& provider_for;
  bool native_only = false;
  bool gpu_host = false;
  const specs::Requirement* main_req = nullptr; // the request for the framework's main package
  std::string pinned_extra;                     // a requested extra naming a variant
  std::vector<std::string> companions;          // set members after the main package
  FrameworkChoice out;
  std::vector<util::Message> closest; // newest not-covering build per variant
  std::set<std::string> closest_variants;
  std::optional<Error> last_closure_error;
  bool any_index = false;
  // Native SASS in any channel ranks above PTX JIT: a JIT-only set that resolves is kept as the
  // fallback while the later channels are searched for a build with SASS for every GPU.
  std::optional<FrameworkChoice> jit_fallback;
  std::optional<Rejection> jit_rejection;
  // Other packages of the request (GPU extensions such as xformers) whose every file was read as
  // holding nothing for a GPU: name → what was read; and the main version they were to fit.
  std::map<std::string, std::vector<std::string>> extension_misses;
  std::optional<specs::Version> extension_against;
  std::vector<util::Message> skipped;        // supplementary indexes that could not be read, and why
  std::optional<CompanionGap> companion_gap; // the first covering build whose index lacks a companion
  std::optional<ExtensionGap> extension_gap; // the first covering build an extension of the request keeps out
  std::vector<util::Message> widened_notes;  // the candidate's extensions taken from another index (resolve_widened)

  void reject(Rejection r) { out.rejected.push_back(std::move(r)); }
  std::set<RejectReason> near_reasons;          // why the closest builds failed
  std::optional<specs::CudaVersion> jit_cuda;   // the CUDA of a build refused as ptx-needs-newer-driver
  std::optional<FrameworkIndex> oldest_too_new; // the index of the oldest CUDA the driver cannot run
  void near_miss(const Rejection& r, const std::string& channel, const FrameworkIndex& idx) {
    near_reasons.insert(r.reason);
    if (r.reason == RejectReason::ptx_needs_newer_driver && (!jit_cuda || *idx.cuda > *jit_cuda)) jit_cuda = idx.cuda;
    if (closest_variants.insert(idx.variant).second)
      closest.push_back(
          util::msg("{} {} ({} {}): {}: {}", r.name, r.version, channel, idx.variant, to_string(r.reason), r.why()));
  }
  [[nodiscard]] std::string driver() const { return host.driver_version.empty() ? "the host's" : host.driver_version; }
};

// The channel's indexes this host and request allow, newest CUDA first (the CPU build first on a host
// without GPUs); the others are rejected with the reason.
std::vector<FrameworkIndex> usable_indexes(Pass& p, const std::string& channel) {
  const auto& host = p.host;
  const auto& request = p.request;
  std::vector<FrameworkIndex> indexes;
  for (const auto& i : p.spec.indexes) {
    if (i.channel != channel) continue;
    Rejection r{main_of(p.spec, i), "", i.url, RejectReason::pin, "", ""};
    if (!request.variant.empty() && i.variant != request.variant) {
      r.because(util::msg("variant {} (--variant {} was requested)", i.variant, request.variant));
    } else if (!p.pinned_extra.empty() && i.extra != p.pinned_extra) {
      r.because(
          util::msg("variant {} ({}[{}] was requested)", i.variant, specs::normalize_name(p.spec.main_package), p.pinned_extra));
    } else if (p.gpu_host && !i.cuda && !request.allow_cpu && request.variant != i.variant) {
      r.reason = RejectReason::arch_not_covered;
      r.because(util::msg("{} build has no GPU kernels (use --allow-cpu to accept it)", i.variant));
    } else if (i.cuda && host.driver_supports && !host.driver_supports(*i.cuda) && host.driver_version.empty()) {
      // Not an old driver: none at all (a --gpu given on a machine without one), so no version to upgrade.
      r.reason = RejectReason::no_driver;
      r.because(util::msg("CUDA {} (variant {}) needs an NVIDIA driver; none was found or given (--driver)", i.cuda->to_string(),
                          i.variant));
    } else if (i.cuda && host.driver_supports && !host.driver_supports(*i.cuda)) {
      r.reason = RejectReason::driver_too_old;
      r.because(util::msg("CUDA {} (variant {}) needs a newer driver than {}", i.cuda->to_string(), i.variant, p.driver()));
      if (!p.oldest_too_new || *i.cuda < *p.oldest_too_new->cuda) p.oldest_too_new = i;
    } else if (p.native_only && i.cuda && !runs_natively(host, *i.cuda)) {
      r.reason = RejectReason::driver_too_old;
      r.because(util::msg("CUDA {} needs a newer driver than {} natively; it runs there only through minor-version "
                          "compatibility, tried only when no natively supported variant gives a set",
                          i.cuda->to_string(), p.driver()));
    } else {
      indexes.push_back(i);
      continue;
    }
    p.reject(std::move(r));
  }
  std::stable_sort(indexes.begin(), indexes.end(), [&](const auto& a, const auto& b) {
    if (!p.gpu_host && (a.variant == "cpu") != (b.variant == "cpu")) return a.variant == "cpu";
    return cuda_rank(a) > cuda_rank(b);
  });
  if (!indexes.empty()) p.any_index = true;
  return indexes;
}

// The request's and the index's say on one version of the main package; nullopt admits it.
std::optional<Rejection> version_veto(const Pass& p, const FrameworkIndex& idx, const std::string& channel,
                                      const ProjectFile& f) {
  Rejection r{main_of(p.spec, idx), f.version.to_string(), idx.url, RejectReason::pin, "", f.file.filename};
  std::optional<bool> pre;
  if (channel == "nightly" || channel == "test") pre = true;
  if (p.main_req && !p.main_req->specifier.contains(f.version, pre)) {
    r.because(util::msg("excluded by {}", p.main_req->to_string()));
  } else if (!p.main_req && !pre && f.version.is_prerelease()) {
    r.because(util::msg("pre-release on the stable channel"));
  } else if (f.version.has_local() && f.version.local() != idx.variant) {
    r.reason = RejectReason::mixed_variant;
    r.because(util::msg("+{} build on the {} index", f.version.local(), idx.variant));
  } else if (f.file.yanked && !(p.main_req && is_pinned(p.main_req->specifier))) { // PEP 592: `==` may pick it
    r.reason = RejectReason::yanked;
    r.because(f.file.yanked_reason.empty() ? util::msg("yanked") : util::msg("yanked: {}", f.file.yanked_reason));
  } else {
    return std::nullopt;
  }
  return r;
}

// Do the build's kernels run on every GPU? What its binaries said, else the matrices' row. Fills the
// candidate's cover text, warnings and JIT flag; false (after rejecting it) when they do not run.
bool judge_kernels(Pass& p, const FrameworkIndex& idx, const std::string& channel, MainCandidate& mc) {
  const auto& f = mc.file;
  const auto& host = p.host;
  const std::string main = main_of(p.spec, idx), ver = f.version.to_string();
  Rejection r{main, ver, idx.url, RejectReason::arch_not_covered, "", f.file.filename};
  std::vector<specs::ComputeCapability> jit_only;
  auto facts = p.gpu_host && idx.cuda && p.spec.evidence ? p.spec.evidence(f.file, f.wheel, idx.variant) : std::nullopt;
  if (facts) {
    // What the binaries said outranks any table row.
    auto ev = judge_evidence(*facts, host.gpus);
    if (ev.none) {
      r.because(util::msg("read from the binaries ({}): none of its {} GPU modules runs on {}; they hold {}", facts->source,
                          ev.none_coverage.total(), ev.none->sm_name(), evidence_archs(*facts)));
      p.near_miss(r, channel, idx);
      p.reject(std::move(r));
      return false;
    }
    mc.cover = util::msg("its binaries cover {} ({})", gpu_list(host.gpus), facts->source);
    if (!ev.partial.empty()) {
      mc.partial = true;
      mc.cover = util::msg("its binaries cover {} only partly ({})", gpu_list(ev.partial), facts->source);
      mc.warnings.push_back(util::msg("{} {}: its binaries cover {} only partly (read from {}); a small test may "
                                      "pass and the full app fail",
                                      main, ver, gpu_list(ev.partial), facts->source));
    }
    jit_only = ev.jit_only;
  } else if (p.gpu_host && idx.cuda) {
    auto archs = p.spec.archs ? p.spec.archs(f.version, idx.variant) : std::nullopt;
    if (!archs) {
      mc.cover = util::msg("unverified (no arch data for this build), checked after download");
      mc.warnings.push_back(util::msg("{} {}: unverified (no arch data for this build, arch-unverified), checked after "
                                      "download",
                                      main, ver));
      Rejection unverified{main, ver, idx.url, RejectReason::arch_unverified, "", f.file.filename};
      unverified.because(util::msg("accepted without arch data; unverified, checked after download"));
      p.reject(std::move(unverified));
      return true;
    }
    auto cov = check_coverage(*archs, host.gpus);
    if (!cov.uncovered.empty()) {
      r.because(util::msg("kernels {}; {}", arch_list(*archs), not_covered(cov.uncovered)));
      p.near_miss(r, channel, idx);
      p.reject(std::move(r));
      return false;
    }
    bool verified = p.spec.archs_verified && p.spec.archs_verified(f.version, idx.variant);
    mc.cover = verified ? util::msg("the matrices say its kernels cover {} (checked after download)", gpu_list(host.gpus))
                        : util::msg("the matrices' unverified row lists kernels for {}: unverified, checked after download",
                                    gpu_list(host.gpus));
    jit_only = cov.ptx_only;
  }
  mc.ptx_only = !jit_only.empty();
  if (!mc.ptx_only) return true;
  // JIT of PTX needs a driver that knows its ISA: minor-version compatibility runs newer SASS, not newer PTX.
  if (!runs_natively(host, *idx.cuda)) {
    r.reason = RejectReason::ptx_needs_newer_driver;
    r.because(util::msg("runs on {} only through PTX JIT of CUDA {} PTX{}; driver {} runs CUDA {} only through "
                        "minor-version compatibility, which cannot JIT PTX newer than the driver's own CUDA",
                        gpu_list(jit_only), idx.cuda->to_string(), idx.ptx_isa.empty() ? "" : " (ISA " + idx.ptx_isa + ")",
                        p.driver(), idx.cuda->to_string()));
    p.near_miss(r, channel, idx);
    p.reject(std::move(r));
    return false;
  }
  mc.warnings.push_back(util::msg("{} {} runs on {} only through PTX JIT compilation (slow first start, possibly lower "
                                  "performance)",
                                  main, ver, gpu_list(jit_only)));
  return true;
}

// The main-package builds of the channel's indexes that may run here, newest first.
Expected<std::vector<MainCandidate>> main_candidates(Pass& p, const std::vector<FrameworkIndex>& indexes,
                                                     const std::string& channel) {
  std::vector<MainCandidate> cands;
  for (std::size_t pos = 0; pos < indexes.size(); ++pos) {
    const auto& idx = indexes[pos];
    auto files = p.provider_for(idx).candidates(main_of(p.spec, idx));
    if (!files && idx.supplementary) {
      p.skipped.push_back(util::msg("the {} index {} (variant {}) could not be read, so its builds were not considered: {}",
                                    channel, idx.url, idx.variant, files.error().said_message()));
      continue;
    }
    if (!files)
      return std::unexpected(std::move(files).error().context(util::msg("cannot read the {} index {}", channel, idx.url)));
    ResolveOptions opts;
    opts.target = p.host.python;
    opts.allow_unhashed = p.request.allow_unhashed;
    opts.filter = p.request.user_filter;
    auto pf = classify_files(*files, opts);
    for (auto& r : pf.rejected) p.reject(r);
    std::vector<specs::Version> seen;
    for (const auto& f : pf.usable) {
      if (std::find(seen.begin(), seen.end(), f.version) != seen.end()) continue;
      seen.push_back(f.version);
      if (auto veto = version_veto(p, idx, channel, f)) {
        p.reject(std::move(*veto));
        continue;
      }
      MainCandidate mc{f, pos, {}, false, false, {}};
      if (judge_kernels(p, idx, channel, mc)) cands.push_back(std::move(mc));
    }
  }
  std::stable_sort(cands.begin(), cands.end(), [](const MainCandidate& a, const MainCandidate& b) {
    auto pa = a.file.version.public_version(), pb = b.file.version.public_version();
    if (pa != pb) return pa > pb;
    return a.index_pos < b.index_pos;
  });
  return cands;
}

// The roots of a set: the main package pinned, with the variant's extra (jax[cuda13]); the companions
// with their coupled versions; then the other requested packages.
Expected<std::vector<specs::Requirement>> set_roots(const Pass& p, const FrameworkIndex& idx, const specs::Version& v) {
  std::vector<specs::Requirement> roots;
  auto main_pin = ENVFIX_TRY(specs::Requirement::parse(fmt::format("{}=={}", main_of(p.spec, idx), v.to_string())));
  if (p.main_req) main_pin.extras = p.main_req->extras;
  if (!idx.extra.empty() && std::none_of(main_pin.extras.begin(), main_pin.extras.end(), [&](const std::string& e) {
        return specs::normalize_name(e) == specs::normalize_name(idx.extra);
      })) {
    main_pin.extras.push_back(idx.extra);
    std::sort(main_pin.extras.begin(), main_pin.extras.end());
  }
  roots.push_back(std::move(main_pin));
  const bool nightly = v.dev().has_value();
  for (const auto& comp : p.companions) {
    const specs::Requirement* user = find_req(p.request.framework, comp);
    std::string text = comp;
    if (user && !user->extras.empty()) {
      text += "[";
      for (std::size_t e = 0; e < user->extras.size(); ++e) text += (e ? "," : "") + user->extras[e];
      text += "]";
    }
    std::vector<std::string> clauses;
    if (user && !user->specifier.empty()) clauses.push_back(user->specifier.to_string());
    auto coupled = (!nightly && p.spec.companion_version) ? p.spec.companion_version(v.public_version(), comp) : std::nullopt;
    if (coupled) clauses.push_back("==" + *coupled);
    if (nightly) clauses.push_back(">=0.0.dev0"); // names a pre-release: allows this companion's nightlies
    for (std::size_t c = 0; c < clauses.size(); ++c) text += (c ? "," : "") + clauses[c];
    roots.push_back(ENVFIX_TRY(specs::Requirement::parse(text)));
  }
  roots.insert(roots.end(), p.request.others.begin(), p.request.others.end());
  return roots;
}

// The vetoes on the set's members beside the main package (companions and the variant's packages):
// the same variant, the same nightly date, and no binaries known to hold nothing for a GPU.
CandidateFilter set_filter(const Pass& p, const FrameworkIndex& idx, const specs::Version& v) {
  std::set<std::string> members(p.companions.begin(), p.companions.end());
  for (const auto& k : idx.packages) members.insert(specs::normalize_name(k));
  std::string main = main_of(p.spec, idx), variant = idx.variant;
  std::optional<std::uint64_t> date = v.dev();
  const auto* evidence = p.gpu_host && idx.cuda && p.spec.evidence ? &p.spec.evidence : nullptr;
  const auto gpus = p.host.gpus;
  return [members, variant, date, main, evidence, gpus](const index::Candidate& c,
                                                        const specs::WheelFilename& wf) -> std::optional<Veto> {
    if (c.project == main) return std::nullopt;
    // A member, or any other package of the plan (a GPU extension such as xformers), whose binaries
    // were read and hold nothing for a GPU cannot join the set.
    if (evidence)
      if (auto facts = (*evidence)(c, wf, variant))
        if (auto ev = judge_evidence(*facts, gpus); ev.none)
          return Veto{RejectReason::arch_not_covered,
                      util::msg("read from the binaries ({}): none of its {} GPU modules runs on {}", facts->source,
                                ev.none_coverage.total(), ev.none->sm_name())};
    if (!members.contains(c.project)) return std::nullopt;
    if (wf.version.has_local() && wf.version.local() != variant)
      return Veto{RejectReason::mixed_variant, util::msg("+{} build; the set is {}", wf.version.local(), variant)};
    if (date && wf.version.dev() != date)
      return Veto{RejectReason::nightly_date_mismatch,
                  util::msg("build dev{}; the set's {} is dev{}", wf.version.dev() ? *wf.version.dev() : 0, main, *date)};
    return std::nullopt;
  };
}

// Why a set did not resolve, from the index itself: a companion with no file of its coupled version
// (companion-missing), a member whose every such file the set's vetoes refused (their reason), else
// a dependency conflict.
// `missing` receives the companion that has no file, for companion-missing.
RejectReason failed_set_reason(const Pass& p, CandidateProvider& provider, const FrameworkIndex& idx,
                               const std::vector<specs::Requirement>& roots, const CandidateFilter& filter,
                               std::string& missing) {
  ResolveOptions opts;
  opts.target = p.host.python;
  opts.allow_unhashed = p.request.allow_unhashed;
  std::vector<std::pair<std::string, const specs::Requirement*>> members;
  for (std::size_t k = 1; k <= p.companions.size() && k < roots.size(); ++k)
    members.emplace_back(roots[k].normalized_name(), &roots[k]);
  for (const auto& n : idx.packages) members.emplace_back(specs::normalize_name(n), nullptr);
  std::optional<RejectReason> vetoed;
  for (const auto& [name, root] : members) {
    auto files = provider.candidates(name);
    if (!files) continue;
    auto usable = classify_files(*files, opts).usable;
    std::erase_if(usable, [&](const ProjectFile& f) { return root && !root->specifier.contains(f.version, true); });
    if (usable.empty()) {
      if (root) {
        missing = name;
        return RejectReason::companion_missing;
      }
      continue;
    }
    std::optional<RejectReason> why;
    bool any_kept = false;
    for (const auto& f : usable) {
      if (auto veto = filter(f.file, f.wheel))
        why = veto->reason;
      else
        any_kept = true;
    }
    if (!any_kept && why && !vetoed) vetoed = why;
  }
  return vetoed.value_or(RejectReason::conflict);
}

// The variant a resolved set really is: its index's, unless the variant's kernels live in packages
// the set does not hold (jax without jax-cuda13-plugin is CPU-only, arch-not-covered) or holds those of
// another variant (mixed-variant). nullopt when it is the index's.
std::optional<Veto> realized_variant_problem(const Pass& p, const FrameworkIndex& idx, const Resolution& res) {
  if (!idx.cuda) return std::nullopt;
  auto need = set_kernel_packages(p.spec, idx);
  if (need.empty() || !held(res, need).empty()) return std::nullopt;
  for (const auto& other : p.spec.indexes)
    if (other.variant != idx.variant)
      if (auto h = held(res, set_kernel_packages(p.spec, other)); !h.empty())
        return Veto{RejectReason::mixed_variant, util::msg("the resolved set holds {} of variant {}, not the {} packages",
                                                           join(h), other.variant, idx.variant)};
  return Veto{RejectReason::arch_not_covered, util::msg("the resolved set holds none of {}: a CPU-only set", join(need))};
}

// The summary line, from the planned set: which build, and where its kernels are.
util::Message summary(const Pass& p, const FrameworkIndex& idx, const std::string& channel, const MainCandidate& mc,
                      const Resolution& res) {
  const auto& v = mc.file.version;
  util::Message cuda = util::plain("");
  if (idx.cuda) {
    auto joined = util::plain("CUDA " + idx.cuda->to_string());
    if (!p.host.driver_version.empty()) joined = util::msg("{}; driver {} runs it", joined, p.host.driver_version);
    if (auto h = held(res, set_kernel_packages(p.spec, idx)); !h.empty())
      joined = util::msg("{}; kernels in {}", joined, join(h));
    cuda = util::msg(" ({})", joined);
  }
  const auto cover =
      p.gpu_host ? (idx.cuda ? mc.cover : util::msg("CPU build (--allow-cpu)")) : util::msg("no GPU on the target");
  return util::msg("{} {} from the {} channel, variant {}{}: {}", main_of(p.spec, idx), v.to_string(), channel, idx.variant, cuda,
                   cover);
}

// The packages beside the set that the binaries' evidence turned down, for the error that names them.
void note_extension_misses(Pass& p, const std::vector<Rejection>& rejected, const std::string& main, const specs::Version& v) {
  for (const auto& r : rejected) {
    if (r.reason != RejectReason::arch_not_covered || r.name == main ||
        std::find(p.companions.begin(), p.companions.end(), r.name) != p.companions.end())
      continue;
    auto& seen = p.extension_misses[r.name];
    auto line = fmt::format("{} {}: {}", r.name, r.version, r.detail);
    if (std::find(seen.begin(), seen.end(), line) == seen.end()) seen.push_back(std::move(line));
    if (!p.extension_against || v > *p.extension_against) p.extension_against = v;
  }
}

// Pinned elsewhere: every usable file of `other` the provider offers requires another version of the
// main package (xformers 0.0.29.post2: torch==2.6.0).
bool pinned_elsewhere(CandidateProvider& provider, const ResolveOptions& opts, const specs::Requirement& other,
                      const std::string& main, const specs::Version& v) {
  auto files = provider.candidates(other.normalized_name());
  if (!files) return false;
  auto usable = classify_files(*files, opts).usable;
  if (usable.empty()) return false;
  return std::all_of(usable.begin(), usable.end(), [&](const ProjectFile& f) {
    auto md = provider.metadata(f.file);
    if (!md) return false;
    return std::any_of(md->requires_dist.begin(), md->requires_dist.end(), [&](const specs::Requirement& q) {
      return q.normalized_name() == main && !q.specifier.empty() && !q.specifier.contains(v, true);
    });
  });
}

// The version of the main package the builds of `other` pin exactly (the newest `==X` among them).
std::optional<specs::Version> pinned_version(CandidateProvider& provider, const specs::Requirement& other,
                                             const std::string& main) {
  std::optional<specs::Version> out;
  auto files = provider.candidates(other.normalized_name());
  if (!files) return out;
  for (const auto& f : *files)
    if (auto md = provider.metadata(f))
      for (const auto& q : md->requires_dist)
        if (q.normalized_name() == main && is_pinned(q.specifier))
          for (const auto& c : q.specifier.clauses())
            if (c.version() && (!out || *c.version() > *out)) out = *c.version();
  return out;
}

// A set an extension of the request pinned elsewhere kept out, resolved again with that extension
// looked for on every configured index (issue 56, item 2), said in a warning naming where its build
// came from; nullopt when no other index changes anything.
std::optional<Resolution> resolve_widened(Pass& p, CandidateProvider& provider, const ResolveOptions& opts,
                                          const std::vector<specs::Requirement>& roots, const std::string& main,
                                          const specs::Version& v) {
  std::vector<std::string> widened;
  for (const auto& other : p.request.others)
    if (pinned_elsewhere(provider, opts, other, main, v) && provider.widen(other.normalized_name()))
      widened.push_back(other.normalized_name());
  if (widened.empty()) return std::nullopt;
  Resolver again(provider, opts);
  auto res = again.resolve(roots);
  if (!res) return std::nullopt;
  for (const auto& n : widened)
    if (const auto* pin = res->find(n))
      p.widened_notes.push_back(util::msg("{} {} comes from {}: every build of it on the first index that has it "
                                          "requires another {} than {}",
                                          n, pin->version.to_string(), pin->file.index_url, main, v.to_string()));
  return std::optional<Resolution>(std::move(*res));
}

// The package of the request beside the framework (an extension) without which the set resolves.
std::optional<ExtensionGap> extension_keeping_out(const Pass& p, CandidateProvider& provider, const ResolveOptions& opts,
                                                  const std::vector<specs::Requirement>& roots, const std::string& main,
                                                  const specs::Version& v, const std::string& channel, const FrameworkIndex& idx,
                                                  const std::string& conflict) {
  for (const auto& other : p.request.others) {
    if (p.extension_misses.contains(other.normalized_name()) || !pinned_elsewhere(provider, opts, other, main, v)) continue;
    std::vector<specs::Requirement> without;
    for (const auto& r : roots)
      if (r.normalized_name() != other.normalized_name()) without.push_back(r);
    Resolver again(provider, opts);
    if (again.resolve(without))
      return ExtensionGap{
          main, v, channel, idx.variant, other.normalized_name(), conflict, pinned_version(provider, other, main)};
  }
  return std::nullopt;
}

// Resolve the set of one main-package build; true when it is the choice (p.out), false when the
// next candidate is to be tried (rejected, or kept as the JIT fallback).
Expected<bool> try_candidate(Pass& p, const FrameworkIndex& idx, const std::string& channel, const MainCandidate& mc) {
  const auto& v = mc.file.version;
  const std::string main = main_of(p.spec, idx);
  auto roots = ENVFIX_TRY(set_roots(p, idx, v));
  ResolveOptions opts;
  opts.target = p.host.python;
  opts.allow_unhashed = p.request.allow_unhashed;
  opts.filter = both(set_filter(p, idx, v), p.request.user_filter);
  auto& provider = p.provider_for(idx);
  Resolver resolver(provider, opts);
  auto res = resolver.resolve(roots);
  for (const auto& r : resolver.rejected()) p.out.rejected.push_back(r);
  p.widened_notes.clear();
  if (!res && res.error().code == ErrorCode::unsatisfiable && p.gpu_host)
    if (auto wide = resolve_widened(p, provider, opts, roots, main, v)) res = std::move(*wide);
  if (!res) {
    if (res.error().code != ErrorCode::unsatisfiable && res.error().code != ErrorCode::not_found)
      return std::unexpected(res.error());
    note_extension_misses(p, resolver.rejected(), main, v);
    std::string missing;
    const auto why = failed_set_reason(p, provider, idx, roots, opts.filter, missing);
    if (why == RejectReason::companion_missing && !p.companion_gap)
      p.companion_gap = CompanionGap{main, v, channel, idx.variant, missing};
    if (why == RejectReason::conflict && p.gpu_host && !p.extension_gap)
      p.extension_gap = extension_keeping_out(p, provider, opts, roots, main, v, channel, idx, res.error().message);
    Rejection r{main, v.to_string(), idx.url, why, "", mc.file.file.filename};
    r.because(res.error().said_message());
    p.reject(std::move(r));
    p.last_closure_error = res.error();
    return false;
  }
  FrameworkIndex chosen = idx;
  if (auto problem = realized_variant_problem(p, idx, *res)) {
    Rejection r{main, v.to_string(), idx.url, problem->reason, "", mc.file.file.filename};
    r.because(problem->detail);
    if (r.reason == RejectReason::mixed_variant || (p.gpu_host && !p.request.allow_cpu)) {
      if (r.reason == RejectReason::arch_not_covered)
        r.because(util::msg("{} (no GPU kernels; --allow-cpu accepts it)", r.why()));
      p.near_miss(r, channel, idx);
      p.reject(std::move(r));
      return false;
    }
    // Named for what it is: a CPU-only set is not variant cuda13.
    chosen.variant = "cpu";
    chosen.cuda.reset();
  }
  p.out.index = chosen;
  p.out.resolution = std::move(*res);
  p.out.warnings = mc.warnings;
  p.out.warnings.insert(p.out.warnings.end(), p.widened_notes.begin(), p.widened_notes.end());
  p.out.warnings.insert(p.out.warnings.end(), p.skipped.begin(), p.skipped.end());
  p.out.why = summary(p, chosen, channel, mc, p.out.resolution);
  if (!chosen.cuda && idx.cuda && p.gpu_host)
    p.out.why = util::msg("{} ({} of variant {} brings no GPU kernels)", p.out.why, main, idx.variant);
  // The legacy ladder: say when this is the last release that will cover an old GPU.
  bool pinned = p.main_req && !p.main_req->specifier.empty();
  if (auto note = last_release_note(p.spec, v, p.host.gpus, !pinned); !note.empty()) p.out.warnings.push_back(note);
  if (!idx.discovered.empty()) p.out.warnings.push_back(idx.discovered);
  // The guide's nightly pitfall: a nightly is no release, and its index keeps only recent dates.
  if (channel == "nightly")
    p.out.warnings.push_back(
        util::msg("{} {} is a nightly build: untested as a release and may change or break without notice; the nightly index "
                  "deletes old builds, so a lock naming this file stops working when it is gone: keep the lockfile's hashes and "
                  "a copy of the wheels (--find-links), and move to a release as soon as one covers {}",
                  main, v.to_string(), p.host.gpus.empty() ? util::msg("this host") : util::plain(gpu_list(p.host.gpus))));
  if (chosen.cuda && (mc.ptx_only || mc.partial)) {
    if (!p.jit_fallback) {
      p.jit_fallback = p.out;
      p.jit_rejection = Rejection{main,    v.to_string(),
                                  idx.url, mc.partial ? RejectReason::arch_partly_covered : RejectReason::ptx_jit_only,
                                  "",      mc.file.file.filename};
      p.jit_rejection->because(mc.partial
                                   ? util::msg("its binaries cover the GPUs only partly; a fully covered build ranks above it")
                                   : util::msg("runs only through PTX JIT; a build with native SASS ranks above it"));
    }
    return false;
  }
  if (p.jit_rejection) p.out.rejected.push_back(*p.jit_rejection);
  return true;
}

// The first toolkit whose nvcc has code for every GPU of the host: the newest of each GPU's first.
std::optional<specs::CudaVersion> newest_first_toolkit(const Pass& p) {
  std::optional<specs::CudaVersion> min_cuda;
  if (p.spec.first_toolkit)
    for (const auto& g : p.host.gpus)
      if (auto t = p.spec.first_toolkit(g); t && (!min_cuda || *t > *min_cuda)) min_cuda = t;
  return min_cuda;
}

// What to build from source: the pinned release, else the newest one the host turned down; the
// newest toolkit any GPU needs first.
SourceBuild source_build_of(const Pass& p) {
  SourceBuild b{specs::normalize_name(p.spec.main_package), std::nullopt, p.host.gpus, std::nullopt};
  if (p.main_req && is_pinned(p.main_req->specifier))
    for (const auto& c : p.main_req->specifier.clauses())
      if (c.version()) b.version = *c.version();
  if (!b.version)
    for (const auto& r : p.out.rejected)
      if (r.name == b.framework && r.reason == RejectReason::arch_not_covered)
        if (auto v = specs::Version::parse(r.version); v && !v->is_prerelease() && (!b.version || *v > *b.version))
          b.version = *v;
  b.min_cuda = newest_first_toolkit(p);
  return b;
}

// The releases of the main package on the indexes read, when the request's specifier alone refused
// every one of them (each rejection `pin`, "excluded by"); empty otherwise.
std::set<specs::Version> pin_only_releases(const Pass& p, const std::string& main) {
  std::set<specs::Version> out;
  if (!p.main_req || p.main_req->specifier.empty()) return out;
  for (const auto& r : p.out.rejected) {
    if (r.name != main || r.version.empty()) continue;
    if (r.reason != RejectReason::pin) return {};
    if (auto v = specs::Version::parse(r.version)) out.insert(v->public_version());
  }
  return out;
}

// For `==X` with no such release: the release nearest below X (2.99 → the newest 2.x), else the
// oldest above it; nullopt for other specifiers.
std::optional<specs::Version> nearest_release(const std::set<specs::Version>& releases, const specs::Requirement& req) {
  const auto& clauses = req.specifier.clauses();
  if (clauses.size() != 1 || !is_pinned(req.specifier) || !clauses.front().version()) return std::nullopt;
  const auto want = *clauses.front().version();
  auto above = releases.upper_bound(want);
  if (above != releases.begin()) return *std::prev(above);
  if (above != releases.end()) return *above;
  return std::nullopt;
}

// GPUs and no driver: the source build and its toolkit would need the driver as much, so the one
// true step is the driver (or --driver, planning for another machine).
Error no_driver_error(const std::string& main) {
  return Error::made(ErrorCode::unsatisfiable,
                     util::msg("no NVIDIA driver was found or given, and every GPU build of {} needs one", main), {},
                     util::msg("install the NVIDIA driver (nvidia-smi then prints its version), or plan for another "
                               "host's driver with --driver VERSION; `--allow-cpu` installs the CPU build instead"));
}

// A version that does not exist (a typo, a release not yet out): not a host problem, so no
// --allow-cpu and no source build; the versions that do exist instead.
Error no_such_release_error(const Pass& p, const std::string& main, const std::string& req_text,
                            const std::set<specs::Version>& releases) {
  auto e = Error::made(ErrorCode::unsatisfiable, util::msg("no release of {} on its indexes matches {}", main, req_text));
  std::vector<std::string> newest;
  for (auto it = releases.rbegin(); it != releases.rend() && newest.size() < 8; ++it) newest.push_back(it->to_string());
  e.add_cause(util::msg("releases there, newest first: {}{}", join(newest),
                        releases.size() > newest.size() ? util::msg(" ({} in all)", releases.size()).text : std::string()));
  if (auto near = nearest_release(releases, *p.main_req)) e.advise(util::msg("did you mean {}=={}?", main, near->to_string()));
  return e;
}

// The hint of a host that no build fits. A driver too old for every variant: a source build would
// need a toolkit this driver cannot run either, so the step that helps is the driver, named with the
// oldest version that does. Else the CPU build, a driver that JITs, or a source build.
std::optional<util::Message> host_hint(Pass& p, bool arch_problem) {
  if (!p.any_index && p.oldest_too_new && !p.request.allow_cpu) {
    const auto& o = *p.oldest_too_new;
    const auto floor = p.host.driver_floor ? p.host.driver_floor(*o.cuda) : std::nullopt;
    return floor ? util::msg("CUDA {} (variant {}), the oldest this index offers, runs on {} or a newer driver; "
                             "`--allow-cpu` installs the CPU build instead",
                             o.cuda->to_string(), o.variant, *floor)
                 : util::msg("CUDA {} (variant {}), the oldest this index offers, needs a newer driver than this one; "
                             "`--allow-cpu` installs the CPU build instead",
                             o.cuda->to_string(), o.variant);
  }
  if (!arch_problem && !p.gpu_host) return std::nullopt;
  const auto recipe = source_build_recipe(source_build_of(p));
  if (p.jit_cuda)
    return util::msg("a driver that runs CUDA {} natively can JIT its PTX; `--allow-cpu` installs the CPU build "
                     "instead; or {}",
                     p.jit_cuda->to_string(), recipe);
  return util::msg("`--allow-cpu` installs the CPU build instead; or {}", recipe);
}

// Nothing fits: say why plainly.
Error no_set_error(Pass& p) {
  const auto& spec = p.spec;
  const std::string main = specs::normalize_name(spec.main_package);
  Error e{ErrorCode::unsatisfiable, "", {}, ""};
  std::string req_text = p.main_req ? p.main_req->to_string() : main;
  bool arch_problem = !p.closest.empty();
  if (!p.any_index && p.gpu_host && p.host.driver_version.empty()) return no_driver_error(main);
  if (!p.any_index) {
    e.say(util::msg("no {} index is usable on this host", spec.name));
    for (const auto& r : p.out.rejected)
      if (r.version.empty()) e.add_cause(util::msg("{}: {}", r.index, r.why()));
  } else if (arch_problem && p.near_reasons == std::set<RejectReason>{RejectReason::ptx_needs_newer_driver}) {
    e.say(util::msg("no GPU build of {} runs on {} with driver {}: the builds for it need PTX JIT, which this driver cannot "
                    "do for their CUDA",
                    req_text, gpu_list(p.host.gpus), p.driver()));
    e.add_cause(util::msg("the newest builds that came closest:"));
    for (const auto& c : p.closest) e.add_cause(c);
  } else if (const auto& gap = p.companion_gap; gap && p.gpu_host) {
    // The real reason of the nearest rejection (issue 56, item 1): a covering build exists.
    e.say(util::msg("{} {} ({} {}) has code for {}, but its index has no {} for it (companion-missing)", gap->main,
                    gap->version.to_string(), gap->channel, gap->variant, gpu_list(p.host.gpus), gap->companion));
    if (!p.closest.empty()) {
      e.add_cause(util::msg("the newest builds with every companion came closest:"));
      for (const auto& c : p.closest) e.add_cause(c);
    }
    if (p.request.gap_out) *p.request.gap_out = gap;
  } else if (const auto& ext = p.extension_gap; ext && p.gpu_host) {
    e.say(util::msg("{} {} ({} {}) has code for {}, but no build of {} on its index fits it", ext->main, ext->version.to_string(),
                    ext->channel, ext->variant, gpu_list(p.host.gpus), ext->extension));
    e.causes.push_back(ext->conflict);
    if (!p.closest.empty()) {
      e.add_cause(util::msg("the newest builds that fit it came closest:"));
      for (const auto& c : p.closest) e.add_cause(c);
    }
    const auto recipe = extension_build_recipe(
        {ext->extension, std::nullopt, main, ext->version.public_version(), p.host.gpus, newest_first_toolkit(p)});
    for (const auto& m : p.skipped) e.add_cause(m);
    e.add_cause(util::msg("`envfix plan --explain` lists every rejected file"));
    // Three ways, each with its commands: the covering set and the extension rebuilt for it; the
    // extension kept with the version it pins, that framework built for this GPU; or as it is.
    const auto rebuild = util::msg("install {} {} without {} (leave it out of the request; an installed {} built for "
                                   "another {} stops working), then build {} for it: {}",
                                   main, ext->version.to_string(), ext->extension, ext->extension, main, ext->extension, recipe);
    if (ext->wanted)
      e.advise(util::msg("{}; or keep {} with {} {}, built from source for this GPU: {}; or keep the set you have", rebuild,
                         ext->extension, main, ext->wanted->to_string(),
                         source_build_recipe({main, ext->wanted, p.host.gpus, newest_first_toolkit(p)})));
    else
      e.advise(util::msg("{}; or keep the set you have", rebuild));
    return e;
  } else if (arch_problem) {
    e.say(util::msg("no GPU build of {} covers {}", req_text, gpu_list(p.host.gpus)));
    e.add_cause(util::msg("the newest builds that came closest:"));
    for (const auto& c : p.closest) e.add_cause(c);
  } else if (!p.extension_misses.empty()) {
    // The framework fits; an extension asked for beside it has no build with code for the GPU.
    std::vector<std::string> names;
    for (const auto& [name, lines] : p.extension_misses) {
      names.push_back(name);
      e.causes.insert(e.causes.end(), lines.begin(), lines.end());
    }
    const auto against = p.extension_against ? p.extension_against->to_string() : std::string("?");
    e.say(util::msg("no build of {} on the index has code for {} and fits {} {}", join(names), gpu_list(p.host.gpus), main,
                    against));
    const auto min_cuda = newest_first_toolkit(p);
    std::optional<util::Message> recipes;
    for (const auto& n : names) {
      auto r = extension_build_recipe({n, std::nullopt, main, p.extension_against, p.host.gpus, min_cuda});
      recipes = recipes ? util::msg("{}; {}", *recipes, r) : r;
    }
    if (recipes) e.advise(*recipes);
    e.add_cause(util::msg("`envfix plan --explain` lists every rejected file"));
    return e;
  } else if (p.last_closure_error) {
    e = *p.last_closure_error;
    e.say(
        util::msg("no consistent {} set: {}", spec.name, e.said_as(e.message) ? *e.said_as(e.message) : util::plain(e.message)));
  } else if (auto releases = pin_only_releases(p, main); !releases.empty()) {
    return no_such_release_error(p, main, req_text, releases);
  } else {
    e.say(util::msg("no build of {} fits this host", req_text));
    std::map<std::string, int> why;
    for (const auto& r : p.out.rejected)
      if (r.name == main) ++why[std::string(to_string(r.reason))];
    for (const auto& [reason, n] : why) e.add_cause(util::msg("{} file(s) rejected: {}", n, reason));
  }
  if (auto hint = host_hint(p, arch_problem)) e.advise(*hint);
  for (const auto& m : p.skipped) e.add_cause(m);
  e.add_cause(util::msg("`envfix plan --explain` lists every rejected file"));
  return e;
}

// One selection pass; `native_only`: variants the driver runs only through minor-version
// compatibility are rejected (driver-too-old) instead of tried.
Expected<FrameworkChoice> select_pass(const FrameworkSpec& spec, const HostTarget& host, const FrameworkRequest& request,
                                      const ProviderFor& provider_for, bool native_only) {
  Pass p{spec, host, request, provider_for};
  p.native_only = native_only;
  p.gpu_host = !host.gpus.empty();
  const std::string main = specs::normalize_name(spec.main_package);
  p.main_req = find_req(request.framework, main);
  p.pinned_extra = requested_variant_extra(spec, p.main_req);
  // The set: the main package, then requested companions (default: the framework's companions).
  if (request.framework.empty()) {
    for (const auto& c : spec.companions) p.companions.push_back(specs::normalize_name(c));
  } else {
    for (const auto& r : request.framework)
      if (r.normalized_name() != main) p.companions.push_back(r.normalized_name());
  }
  std::vector<std::string> channels = request.channel == "auto" ? std::vector<std::string>{"stable", "test", "nightly"}
                                                                : std::vector<std::string>{request.channel};
  for (const auto& channel : channels) {
    auto indexes = usable_indexes(p, channel);
    auto cands = ENVFIX_TRY(main_candidates(p, indexes, channel));
    for (const auto& mc : cands)
      if (ENVFIX_TRY(try_candidate(p, indexes[mc.index_pos], channel, mc))) return std::move(p.out);
  }
  if (p.jit_fallback) {
    p.jit_fallback->rejected = p.out.rejected;
    auto& why = p.jit_fallback->why;
    why = p.jit_rejection && p.jit_rejection->reason == RejectReason::arch_partly_covered
              ? util::msg("{}; no fully covered build was found, so this partly covered one is the best there is", why)
              : util::msg("{}; no build with native SASS for every GPU was found, so this one runs by PTX JIT", why);
    return *p.jit_fallback;
  }
  auto e = no_set_error(p);
  if (p.request.rejected_out) *p.request.rejected_out = p.out.rejected; // every reason, for --explain
  return std::unexpected(std::move(e));
}

} // namespace

Expected<FrameworkChoice> select_framework_set(const FrameworkSpec& spec, const HostTarget& host, const FrameworkRequest& request,
                                               const ProviderFor& provider_for) {
  bool compat_only_exists = false;
  if (host.driver_native && host.driver_supports)
    for (const auto& i : spec.indexes)
      if (i.cuda && host.driver_supports(*i.cuda) && !host.driver_native(*i.cuda)) compat_only_exists = true;
  if (!compat_only_exists) return select_pass(spec, host, request, provider_for, false);
  auto native = select_pass(spec, host, request, provider_for, true);
  if (native || native.error().code != ErrorCode::unsatisfiable) return native;
  auto compat = select_pass(spec, host, request, provider_for, false);
  if (compat && compat->index.cuda && !host.driver_native(*compat->index.cuda))
    compat->warnings.push_back(util::msg("CUDA {} runs on driver {} only through minor-version compatibility (no JIT of "
                                         "newer PTX; some features need the toolkit's own driver)",
                                         compat->index.cuda->to_string(), host.driver_version));
  return compat;
}

} // namespace envfix::resolver

namespace envfix::resolver {

std::vector<std::string> framework_family(const FrameworkSpec& spec) {
  std::vector<std::string> out{specs::normalize_name(spec.main_package)};
  for (const auto& c : spec.companions) out.push_back(specs::normalize_name(c));
  return out;
}

std::vector<std::string> framework_packages(const FrameworkSpec& spec) {
  auto out = framework_family(spec);
  auto add = [&](const std::string& n) {
    auto x = specs::normalize_name(n);
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  };
  for (const auto& i : spec.indexes) {
    if (!i.main_package.empty()) add(i.main_package);
    for (const auto& k : i.packages) add(k);
  }
  return out;
}

std::vector<std::string> pin_main_request(const FrameworkSpec& spec, const std::vector<std::string>& requests,
                                          const specs::Version& version, const std::vector<std::string>& resolved) {
  const std::string main = specs::normalize_name(spec.main_package);
  const std::string vs = version.to_string();
  const auto pin = *specs::SpecifierSet::parse("==" + vs);
  std::vector<std::string> out;
  bool found = false;
  for (const auto& r : requests) {
    auto req = specs::Requirement::parse(r);
    if (req && req->normalized_name() == main) {
      req->specifier = req->specifier.intersect(pin);
      out.push_back(req->to_string());
      found = true;
    } else {
      out.push_back(r);
    }
  }
  if (found) return out;
  if (requests.empty())
    for (const auto& n : framework_family(spec))
      if (n != main && std::find(resolved.begin(), resolved.end(), n) != resolved.end()) out.push_back(n);
  out.insert(out.begin(), main + "==" + vs);
  return out;
}

FrameworkRequest split_request(const FrameworkSpec& spec, const std::vector<specs::Requirement>& request,
                               const std::vector<std::string>& installed_names) {
  FrameworkRequest out;
  auto family = framework_family(spec);
  auto in_family = [&](const std::string& n) { return std::find(family.begin(), family.end(), n) != family.end(); };
  for (const auto& r : request) (in_family(r.normalized_name()) ? out.framework : out.others).push_back(r);
  if (request.empty()) {
    for (const auto& f : family)
      if (std::find(installed_names.begin(), installed_names.end(), f) != installed_names.end())
        out.framework.push_back(*specs::Requirement::parse(f));
  }
  // The main package always leads the set.
  auto main = family.front();
  if (!out.framework.empty() && std::none_of(out.framework.begin(), out.framework.end(),
                                             [&](const specs::Requirement& r) { return r.normalized_name() == main; }))
    out.framework.insert(out.framework.begin(), *specs::Requirement::parse(main));
  return out;
}

FrameworkRequest without_companion(const FrameworkSpec& spec, FrameworkRequest request, const CompanionGap& gap) {
  if (request.framework.empty()) {
    request.framework.push_back(*specs::Requirement::parse(specs::normalize_name(spec.main_package)));
    for (const auto& c : spec.companions) request.framework.push_back(*specs::Requirement::parse(specs::normalize_name(c)));
  }
  std::erase_if(request.framework, [&](const specs::Requirement& r) { return r.normalized_name() == gap.companion; });
  request.channel = gap.channel;
  request.rejected_out = nullptr;
  request.gap_out = nullptr;
  return request;
}

} // namespace envfix::resolver
