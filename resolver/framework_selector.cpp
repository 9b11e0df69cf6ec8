#include "resolver/framework_selector.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "specs/name.hpp"

namespace envfix::resolver {

namespace {

struct MainCandidate {
  ProjectFile file;
  std::size_t index_pos = 0; // position in the channel's index order (newest CUDA first)
  std::vector<std::string> warnings;
  bool ptx_only = false;     // some GPU runs it only through PTX JIT
  bool partial = false;      // its binaries cover some GPU only partly
  std::string cover;         // why its kernels are believed to run, for the summary line
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
    } else if (pc.verdict == wheel::Verdict::partial) v.partial.push_back(g);
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
    if (!sass && !ptx) v.uncovered.push_back(g);
    else if (!sass) v.ptx_only.push_back(g);
  }
  return v;
}

namespace {

// One selection pass; `native_only`: variants the driver runs only through minor-version
// compatibility are rejected (driver-too-old) instead of tried.
Expected<FrameworkChoice> select_pass(const FrameworkSpec& spec, const HostTarget& host, const FrameworkRequest& request,
                                      const ProviderFor& provider_for, bool native_only) {
  FrameworkChoice out;
  const std::string main = specs::normalize_name(spec.main_package);
  const bool gpu_host = !host.gpus.empty();
  std::vector<std::string> channels =
      request.channel == "auto" ? std::vector<std::string>{"stable", "test", "nightly"} : std::vector<std::string>{request.channel};

  // The set: the main package, then requested companions (default: the framework's companions).
  std::vector<std::string> set_names{main};
  if (request.framework.empty()) {
    for (const auto& c : spec.companions) set_names.push_back(specs::normalize_name(c));
  } else {
    for (const auto& r : request.framework)
      if (r.normalized_name() != main) set_names.push_back(r.normalized_name());
  }
  const specs::Requirement* main_req = find_req(request.framework, main);

  std::vector<std::string> closest;        // newest not-covering build per variant
  std::set<std::string> closest_variants;
  std::optional<Error> last_closure_error;
  bool any_index = false;

  auto reject = [&](Rejection r) { out.rejected.push_back(std::move(r)); };
  // Native SASS in any channel ranks above PTX JIT: a JIT-only set that resolves is kept as the
  // fallback while the later channels are searched for a build with SASS for every GPU.
  std::optional<FrameworkChoice> jit_fallback;
  std::optional<Rejection> jit_rejection;

  for (const auto& channel : channels) {
    std::vector<FrameworkIndex> indexes;
    for (const auto& i : spec.indexes) {
      if (i.channel != channel) continue;
      Rejection r{main, "", i.url, RejectReason::pin, "", ""};
      if (!request.variant.empty() && i.variant != request.variant) {
        r.detail = fmt::format("variant {} (--variant {} was requested)", i.variant, request.variant);
        reject(std::move(r));
        continue;
      }
      if (gpu_host && !i.cuda && !request.allow_cpu && request.variant != i.variant) {
        r.reason = RejectReason::arch_not_covered;
        r.detail = fmt::format("{} build has no GPU kernels (use --allow-cpu to accept it)", i.variant);
        reject(std::move(r));
        continue;
      }
      if (i.cuda && host.driver_supports && !host.driver_supports(*i.cuda)) {
        r.reason = RejectReason::driver_too_old;
        r.detail = fmt::format("CUDA {} needs a newer driver than {}", i.cuda->to_string(),
                               host.driver_version.empty() ? "the host's" : host.driver_version);
        reject(std::move(r));
        continue;
      }
      if (native_only && i.cuda && host.driver_native && !host.driver_native(*i.cuda)) {
        r.reason = RejectReason::driver_too_old;
        r.detail = fmt::format("CUDA {} needs a newer driver than {} natively; it runs there only through minor-version "
                               "compatibility, tried only when no natively supported variant gives a set",
                               i.cuda->to_string(), host.driver_version.empty() ? "the host's" : host.driver_version);
        reject(std::move(r));
        continue;
      }
      indexes.push_back(i);
    }
    // Newest CUDA first; on a host without GPUs the CPU build leads.
    std::stable_sort(indexes.begin(), indexes.end(), [&](const auto& a, const auto& b) {
      if (!gpu_host && (a.variant == "cpu") != (b.variant == "cpu")) return a.variant == "cpu";
      return cuda_rank(a) > cuda_rank(b);
    });
    if (!indexes.empty()) any_index = true;

    std::vector<MainCandidate> cands;
    for (std::size_t pos = 0; pos < indexes.size(); ++pos) {
      const auto& idx = indexes[pos];
      auto& provider = provider_for(idx);
      auto files = provider.candidates(main);
      if (!files) return std::unexpected(std::move(files).error().context(fmt::format("cannot read the {} index {}", channel, idx.url)));
      ResolveOptions opts;
      opts.target = host.python;
      opts.allow_unhashed = request.allow_unhashed;
      auto pf = classify_files(*files, opts);
      for (auto& r : pf.rejected) reject(r);
      std::vector<specs::Version> seen;
      for (const auto& f : pf.usable) {
        if (std::find(seen.begin(), seen.end(), f.version) != seen.end()) continue;
        seen.push_back(f.version);
        Rejection r{main, f.version.to_string(), idx.url, RejectReason::pin, "", f.file.filename};
        std::optional<bool> pre;
        if (channel == "nightly" || channel == "test") pre = true;
        if (main_req && !main_req->specifier.contains(f.version, pre)) {
          r.detail = fmt::format("excluded by {}", main_req->to_string());
          reject(std::move(r));
          continue;
        }
        if (!main_req && !pre && f.version.is_prerelease()) {
          r.detail = "pre-release on the stable channel";
          reject(std::move(r));
          continue;
        }
        if (f.version.has_local() && f.version.local() != idx.variant) {
          r.reason = RejectReason::mixed_variant;
          r.detail = fmt::format("+{} build on the {} index", f.version.local(), idx.variant);
          reject(std::move(r));
          continue;
        }
        if (f.file.yanked) {
          r.reason = RejectReason::yanked;
          r.detail = f.file.yanked_reason.empty() ? "yanked" : "yanked: " + f.file.yanked_reason;
          reject(std::move(r));
          continue;
        }
        MainCandidate mc{f, pos, {}};
        auto facts = gpu_host && idx.cuda && spec.evidence ? spec.evidence(f.wheel, idx.variant) : std::nullopt;
        if (facts) {
          // What the binaries said outranks any table row.
          auto ev = judge_evidence(*facts, host.gpus);
          if (ev.none) {
            r.reason = RejectReason::arch_not_covered;
            r.detail = fmt::format("read from the binaries ({}): none of its {} GPU modules runs on {}; they hold {}",
                                   facts->source, ev.none_coverage.total(), ev.none->sm_name(), evidence_archs(*facts));
            if (closest_variants.insert(idx.variant).second)
              closest.push_back(fmt::format("{} {} ({} {}): {}", main, f.version.to_string(), channel, idx.variant, r.detail));
            reject(std::move(r));
            continue;
          }
          mc.cover = fmt::format("its binaries cover {} ({})", gpu_list(host.gpus), facts->source);
          if (!ev.partial.empty()) {
            mc.partial = true;
            mc.cover = fmt::format("its binaries cover {} only partly ({})", gpu_list(ev.partial), facts->source);
            mc.warnings.push_back(fmt::format("{} {}: its binaries cover {} only partly (read from {}); a small test may "
                                              "pass and the full app fail", main, f.version.to_string(),
                                              gpu_list(ev.partial), facts->source));
          }
          mc.ptx_only = !ev.jit_only.empty();
          if (mc.ptx_only)
            mc.warnings.push_back(fmt::format("{} {} runs on {} only through PTX JIT compilation (slow first start, "
                                              "possibly lower performance)", main, f.version.to_string(), gpu_list(ev.jit_only)));
        } else if (gpu_host && idx.cuda) {
          auto archs = spec.archs ? spec.archs(f.version, idx.variant) : std::nullopt;
          if (!archs) {
            mc.cover = "no arch data for this build: its kernels are checked after download";
            mc.warnings.push_back(fmt::format("{} {}: no arch data for this build (arch-unverified); its kernels are "
                                              "checked after download", main, f.version.to_string()));
            reject(Rejection{main, f.version.to_string(), idx.url, RejectReason::arch_unverified,
                             "accepted without arch data; verified after download", f.file.filename});
          } else {
            auto cov = check_coverage(*archs, host.gpus);
            if (!cov.uncovered.empty()) {
              r.reason = RejectReason::arch_not_covered;
              r.detail = fmt::format("kernels {}; {} not covered", arch_list(*archs), gpu_list(cov.uncovered));
              if (closest_variants.insert(idx.variant).second)
                closest.push_back(fmt::format("{} {} ({} {}): {}", main, f.version.to_string(), channel, idx.variant, r.detail));
              reject(std::move(r));
              continue;
            }
            mc.cover = fmt::format("the matrices say its kernels cover {} (checked after download)", gpu_list(host.gpus));
            mc.ptx_only = !cov.ptx_only.empty();
            if (!cov.ptx_only.empty())
              mc.warnings.push_back(fmt::format("{} {} runs on {} only through PTX JIT compilation (slow first start, "
                                                "possibly lower performance)", main, f.version.to_string(), gpu_list(cov.ptx_only)));
          }
        }
        cands.push_back(std::move(mc));
      }
    }
    std::stable_sort(cands.begin(), cands.end(), [](const MainCandidate& a, const MainCandidate& b) {
      auto pa = a.file.version.public_version(), pb = b.file.version.public_version();
      if (pa != pb) return pa > pb;
      return a.index_pos < b.index_pos;
    });

    for (const auto& mc : cands) {
      const auto& idx = indexes[mc.index_pos];
      const auto& v = mc.file.version;
      std::vector<specs::Requirement> roots;
      auto main_pin = specs::Requirement::parse(fmt::format("{}=={}", main, v.to_string()));
      if (!main_pin) return std::unexpected(main_pin.error());
      if (main_req) main_pin->extras = main_req->extras;
      roots.push_back(*main_pin);
      const bool nightly = v.dev().has_value();
      for (std::size_t k = 1; k < set_names.size(); ++k) {
        const auto& comp = set_names[k];
        const specs::Requirement* user = find_req(request.framework, comp);
        std::string text = comp;
        if (user && !user->extras.empty()) {
          text += "[";
          for (std::size_t e = 0; e < user->extras.size(); ++e) text += (e ? "," : "") + user->extras[e];
          text += "]";
        }
        std::vector<std::string> clauses;
        if (user && !user->specifier.empty()) clauses.push_back(user->specifier.to_string());
        auto coupled = (!nightly && spec.companion_version) ? spec.companion_version(v.public_version(), comp) : std::nullopt;
        if (coupled) clauses.push_back("==" + *coupled);
        if (nightly) clauses.push_back(">=0.0.dev0"); // names a pre-release: allows this companion's nightlies
        for (std::size_t c = 0; c < clauses.size(); ++c) text += (c ? "," : "") + clauses[c];
        auto req = specs::Requirement::parse(text);
        if (!req) return std::unexpected(req.error());
        roots.push_back(*req);
      }
      roots.insert(roots.end(), request.others.begin(), request.others.end());

      std::set<std::string> members(set_names.begin(), set_names.end());
      ResolveOptions opts;
      opts.target = host.python;
      opts.allow_unhashed = request.allow_unhashed;
      std::string variant = idx.variant;
      std::optional<std::uint64_t> date = v.dev();
      const auto* evidence = gpu_host && idx.cuda && spec.evidence ? &spec.evidence : nullptr;
      const auto gpus = host.gpus;
      opts.filter = [members, variant, date, main, evidence, gpus](const index::Candidate& c,
                                                                   const specs::WheelFilename& wf) -> std::optional<Veto> {
        if (!members.contains(c.project) || c.project == main) return std::nullopt;
        // A companion whose binaries were read and hold nothing for a GPU cannot join the set.
        if (evidence)
          if (auto facts = (*evidence)(wf, variant))
            if (auto ev = judge_evidence(*facts, gpus); ev.none)
              return Veto{RejectReason::arch_not_covered,
                          fmt::format("read from the binaries ({}): none of its {} GPU modules runs on {}", facts->source,
                                      ev.none_coverage.total(), ev.none->sm_name())};
        if (wf.version.has_local() && wf.version.local() != variant)
          return Veto{RejectReason::mixed_variant, fmt::format("+{} build; the set is {}", wf.version.local(), variant)};
        if (date && wf.version.dev() != date)
          return Veto{RejectReason::nightly_date_mismatch,
                      fmt::format("build dev{}; the set's {} is dev{}", wf.version.dev() ? *wf.version.dev() : 0, main, *date)};
        return std::nullopt;
      };
      Resolver resolver(provider_for(idx), opts);
      auto res = resolver.resolve(roots);
      for (const auto& r : resolver.rejected())
        out.rejected.push_back(r);
      if (!res) {
        if (res.error().code != ErrorCode::unsatisfiable && res.error().code != ErrorCode::not_found)
          return std::unexpected(res.error());
        // Which companion failed, and why: a missing companion or one of another nightly date.
        RejectReason why = RejectReason::conflict;
        auto text = res.error().render();
        for (std::size_t k = 1; k < set_names.size(); ++k)
          if (text.find("'" + set_names[k] + "'") != std::string::npos || text.find(set_names[k] + "==") != std::string::npos ||
              text.find(set_names[k] + ">=") != std::string::npos)
            why = RejectReason::companion_missing;
        if (why == RejectReason::companion_missing && date) {
          for (const auto& r : resolver.rejected())
            if (r.reason == RejectReason::nightly_date_mismatch) why = RejectReason::nightly_date_mismatch;
        }
        reject(Rejection{main, v.to_string(), idx.url, why, res.error().message, mc.file.file.filename});
        last_closure_error = res.error();
        continue;
      }
      out.index = idx;
      out.resolution = std::move(*res);
      out.warnings = mc.warnings;
      std::string cover = gpu_host ? (idx.cuda ? mc.cover : "CPU build (--allow-cpu)") : "no GPU on the target";
      out.why = fmt::format("{} {} from the {} channel, variant {}{}: {}", main, v.to_string(), channel, idx.variant,
                            idx.cuda ? fmt::format(" (CUDA {}{})", idx.cuda->to_string(),
                                                   host.driver_version.empty() ? "" : ", driver " + host.driver_version + " runs it")
                                     : "",
                            cover);
      // The legacy ladder: say when this is the last release that will cover an old GPU.
      bool pinned = std::any_of(request.framework.begin(), request.framework.end(), [&](const specs::Requirement& r) {
        return r.normalized_name() == main && !r.specifier.empty();
      });
      if (auto note = last_release_note(spec, v, host.gpus, !pinned); !note.empty()) out.warnings.push_back(note);
      if (!idx.discovered.empty()) out.warnings.push_back(idx.discovered);
      if (mc.ptx_only || mc.partial) {
        if (!jit_fallback) {
          jit_fallback = out;
          jit_rejection = mc.partial ? Rejection{main, v.to_string(), idx.url, RejectReason::arch_partly_covered,
                                                 "its binaries cover the GPUs only partly; a fully covered build ranks above it",
                                                 mc.file.file.filename}
                                     : Rejection{main, v.to_string(), idx.url, RejectReason::ptx_jit_only,
                                                 "runs only through PTX JIT; a build with native SASS ranks above it",
                                                 mc.file.file.filename};
        }
        continue;
      }
      if (jit_rejection) out.rejected.push_back(*jit_rejection);
      return out;
    }
  }
  if (jit_fallback) {
    jit_fallback->rejected = out.rejected;
    jit_fallback->why += jit_rejection && jit_rejection->reason == RejectReason::arch_partly_covered
                             ? "; no fully covered build was found, so this partly covered one is the best there is"
                             : "; no build with native SASS for every GPU was found, so this one runs by PTX JIT";
    return *jit_fallback;
  }

  // Nothing fits: say why plainly.
  Error e{ErrorCode::unsatisfiable, "", {}, ""};
  std::string req_text = main_req ? main_req->to_string() : main;
  bool arch_problem = !closest.empty();
  if (!any_index) {
    e.message = fmt::format("no {} index is usable on this host", spec.name);
    for (const auto& r : out.rejected)
      if (r.version.empty()) e.causes.push_back(fmt::format("{}: {}", r.index, r.detail));
  } else if (arch_problem) {
    e.message = fmt::format("no GPU build of {} covers {}", req_text, gpu_list(host.gpus));
    e.causes.push_back("the newest builds that came closest:");
    for (const auto& c : closest) e.causes.push_back(c);
  } else if (last_closure_error) {
    e = *last_closure_error;
    e.message = fmt::format("no consistent {} set: {}", spec.name, e.message);
  } else {
    e.message = fmt::format("no build of {} fits this host", req_text);
    std::map<std::string, int> why;
    for (const auto& r : out.rejected)
      if (r.name == main) ++why[std::string(to_string(r.reason))];
    for (const auto& [reason, n] : why) e.causes.push_back(fmt::format("{} file(s) rejected: {}", n, reason));
  }
  if (arch_problem || gpu_host) {
    std::string archs;
    for (const auto& g : host.gpus) archs += (archs.empty() ? "" : ";") + g.to_string();
    e.hint = fmt::format("`--allow-cpu` installs the CPU build instead; or build {} from source for this GPU: "
                         "TORCH_CUDA_ARCH_LIST=\"{}\" pip install --no-binary {} {}",
                         spec.name, archs, main, main);
  }
  e.causes.push_back("`envfix plan --explain` lists every rejected file");
  if (request.rejected_out) *request.rejected_out = out.rejected;
  return std::unexpected(e);
}

} // namespace

Expected<FrameworkChoice> select_framework_set(const FrameworkSpec& spec, const HostTarget& host,
                                               const FrameworkRequest& request, const ProviderFor& provider_for) {
  bool compat_only_exists = false;
  if (host.driver_native && host.driver_supports)
    for (const auto& i : spec.indexes)
      if (i.cuda && host.driver_supports(*i.cuda) && !host.driver_native(*i.cuda)) compat_only_exists = true;
  if (!compat_only_exists) return select_pass(spec, host, request, provider_for, false);
  auto native = select_pass(spec, host, request, provider_for, true);
  if (native || native.error().code != ErrorCode::unsatisfiable) return native;
  auto compat = select_pass(spec, host, request, provider_for, false);
  if (compat && compat->index.cuda && !host.driver_native(*compat->index.cuda))
    compat->warnings.push_back(fmt::format("CUDA {} runs on driver {} only through minor-version compatibility (no JIT of "
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

} // namespace envfix::resolver
