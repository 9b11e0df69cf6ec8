// Queries over the loaded matrices (no I/O here; loading is in loader.cpp).
#include "matrices/knowledge.hpp"

#include "specs/name.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>

namespace envfix::matrices {

const char* to_string(Confidence c) {
  switch (c) {
  case Confidence::verified: return "verified";
  case Confidence::secondary: return "secondary";
  case Confidence::unverified: return "unverified";
  }
  return "unverified";
}

const char* to_string(RunKind k) {
  switch (k) {
  case RunKind::native: return "native";
  case RunKind::jit: return "jit";
  case RunKind::none: return "none";
  case RunKind::unknown: return "unknown";
  }
  return "unknown";
}

std::string SourceLocation::to_string() const { return fmt::format("{}:{}:{}", file, line, column); }

bool CudaToolkit::can_target(const specs::GpuArch& arch) const {
  specs::GpuArch as_sass = arch;
  as_sass.kind = specs::GpuArch::Kind::sass;
  return std::find(sass.begin(), sass.end(), as_sass) != sass.end();
}

const ArchBuild* ReleaseVariant::platform(std::string_view name) const {
  for (const auto& p : platforms)
    if (p.platform == name) return &p;
  return nullptr;
}

bool Release::matches(const specs::Version& v) const {
  specs::Version pub = v.public_version();
  for (const auto& x : versions)
    if (x == pub) return true;
  if (nightly) return pub.is_devrelease() && pub.base_version() == nightly->base_version() && !pub.is_postrelease();
  if (range) return range->contains(pub, true);
  return false;
}

std::string Release::label() const {
  if (nightly) return nightly->to_string() + ".dev*";
  if (range) return range->to_string();
  std::vector<std::string> out;
  for (const auto& v : versions) out.push_back(v.to_string());
  return util::join(out, ", ");
}

const ReleaseVariant* Release::variant(std::string_view name) const {
  for (const auto& v : variants)
    if (v.variant == name) return &v;
  return nullptr;
}

const Variant* Framework::variant(std::string_view variant_name) const {
  for (const auto& v : variants)
    if (v.name == variant_name) return &v;
  return nullptr;
}

std::string Framework::main_package_of(std::string_view variant_name) const {
  const Variant* v = variant(variant_name);
  return v && !v->main_package.empty() ? v->main_package : main_package;
}

std::vector<std::string> Framework::kernel_packages(std::string_view variant_name) const {
  const Variant* v = variant(variant_name);
  if (v && !v->kernels.empty()) return v->kernels;
  std::vector<std::string> out{main_package_of(variant_name)};
  out.insert(out.end(), companions.begin(), companions.end());
  return out;
}

const Release* Framework::release(const specs::Version& v) const {
  // Exact rows win over nightly lines, which win over ranges; later rows (overrides) first.
  for (int pass = 0; pass < 3; ++pass) {
    for (auto it = releases.rbegin(); it != releases.rend(); ++it) {
      bool kind = pass == 0 ? !it->versions.empty() : pass == 1 ? it->nightly.has_value() : it->range.has_value();
      if (kind && it->matches(v)) return &*it;
    }
  }
  return nullptr;
}

Expected<std::string> Framework::index_url(std::string_view channel, std::string_view variant_name,
                                           std::string_view mirror) const {
  auto it = channel_templates.find(std::string(channel));
  if (it == channel_templates.end()) return fail(ErrorCode::not_found, "framework {} has no '{}' channel", name, channel);
  std::string base{mirror.empty() ? std::string_view(default_mirror) : mirror};
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = it->second;
  auto replace_all = [&](std::string_view what, std::string_view with) {
    for (auto pos = url.find(what); pos != std::string::npos; pos = url.find(what, pos + with.size()))
      url.replace(pos, what.size(), with);
  };
  replace_all("{mirror}", base);
  replace_all("{variant}", variant_name);
  return url;
}

std::string Framework::mirror_of_index(std::string_view index, std::string_view channel, std::string_view variant_name) const {
  auto def = index_url(channel, variant_name);
  if (!def || !def->starts_with(default_mirror)) return "";
  const std::string_view tail = std::string_view(*def).substr(default_mirror.size());
  if (!index.ends_with(tail)) return "";
  std::string mirror(index.substr(0, index.size() - tail.size()));
  while (mirror.ends_with('/')) mirror.pop_back();
  return mirror;
}

std::vector<std::string> Framework::family(bool optional) const {
  std::vector<std::string> out{specs::normalize_name(main_package)};
  for (const auto& c : companions) out.push_back(specs::normalize_name(c));
  if (optional)
    for (const auto& c : optional_companions) out.push_back(specs::normalize_name(c));
  return out;
}

RunKind VariantBuild::runs_on(specs::ComputeCapability cc) const {
  if (kind != "cuda" || !sass || !ptx) return RunKind::unknown;
  for (const auto& a : *sass)
    if (a.runs_on(cc)) return RunKind::native;
  for (const auto& a : *ptx)
    if (a.runs_on(cc)) return RunKind::jit;
  return RunKind::none;
}

std::optional<specs::GpuArch> VariantBuild::runnable_arch(specs::ComputeCapability cc) const {
  if (!sass || !ptx) return std::nullopt;
  // The closest SASS (highest that runs), else the newest runnable PTX (the driver JITs it).
  for (auto it = sass->rbegin(); it != sass->rend(); ++it)
    if (it->runs_on(cc)) return *it;
  for (auto it = ptx->rbegin(); it != ptx->rend(); ++it)
    if (it->runs_on(cc)) return *it;
  return std::nullopt;
}

const Framework* Knowledge::framework(std::string_view name) const {
  for (const auto& f : m_frameworks)
    if (f.name == name || f.main_package == name) return &f;
  return nullptr;
}

const CudaToolkit* Knowledge::toolkit(specs::CudaVersion v) const {
  for (const auto& t : m_toolkits)
    if (t.version == v) return &t;
  return nullptr;
}

std::optional<std::string> Knowledge::min_driver(specs::CudaVersion cuda, std::string_view os) const {
  const CudaToolkit* t = toolkit(cuda);
  if (!t) return std::nullopt;
  const std::string& d = os == "windows" ? t->min_driver_windows : t->min_driver_linux;
  if (d.empty()) return std::nullopt;
  return d;
}

std::optional<std::string> Knowledge::minor_compat_driver(specs::CudaVersion cuda, std::string_view os) const {
  // A toolkit the matrices do not list shares its major's floor (minor-version compatibility is per major:
  // https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html).
  const CudaToolkit* t = toolkit(cuda);
  if (!t) {
    for (auto it = m_toolkits.rbegin(); it != m_toolkits.rend(); ++it)
      if (it->version.major == cuda.major &&
          (os == "windows" ? !it->minor_compat_windows.empty() : !it->minor_compat_linux.empty())) {
        t = &*it;
        break;
      }
  }
  if (!t) return std::nullopt;
  const std::string& d = os == "windows" ? t->minor_compat_windows : t->minor_compat_linux;
  if (d.empty()) return std::nullopt;
  return d;
}

std::optional<DriverFloor> Knowledge::driver_floor(specs::CudaVersion cuda, std::string_view os) const {
  bool known = toolkit(cuda) != nullptr;
  if (auto d = min_driver(cuda, os)) return DriverFloor{*d, true, known};
  if (auto f = minor_compat_driver(cuda, os)) return DriverFloor{*f, false, known};
  return std::nullopt;
}

std::optional<std::string> Knowledge::set_driver_floor(specs::CudaVersion cuda, std::string_view host_driver,
                                                       std::string_view os) const {
  auto own = min_driver(cuda, os);
  if (own && (!is_driver_version(host_driver) || compare_driver_versions(host_driver, *own) >= 0)) return own;
  auto floor = minor_compat_driver(cuda, os);
  if (floor && is_driver_version(host_driver) && compare_driver_versions(host_driver, *floor) >= 0) return floor;
  return own ? own : floor;
}

bool Knowledge::driver_supports(std::string_view driver_version, specs::CudaVersion cuda, bool allow_minor_compat,
                                std::string_view os) const {
  if (!is_driver_version(driver_version)) return false;
  if (auto need = min_driver(cuda, os); need && compare_driver_versions(driver_version, *need) >= 0) return true;
  // No GA driver known (a toolkit newer than the data, or one without a confirmed driver): the major's
  // floor is the best there is; callers say so (driver_floor().exact).
  if (!min_driver(cuda, os)) allow_minor_compat = true;
  if (allow_minor_compat)
    if (auto floor = minor_compat_driver(cuda, os); floor && compare_driver_versions(driver_version, *floor) >= 0) return true;
  return false;
}

namespace {

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (c == ' ' || c == '-') {
      if (!w.empty()) out.push_back(std::move(w));
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
  return out;
}

std::string compact(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '-') out += c;
  return out;
}

// Every word of `q`, in order, is a word of `key` ("jetson thor" in "jetson agx thor").
bool words_in_order(const std::vector<std::string>& q, const std::vector<std::string>& key) {
  std::size_t i = 0;
  for (const auto& w : key)
    if (i < q.size() && w == q[i]) ++i;
  return i == q.size();
}

} // namespace

Expected<ResolvedGpu> Knowledge::resolve_gpu(std::string_view query) const {
  if (auto c = specs::ComputeCapability::parse(query)) {
    // "sm_900" parses as 90.0; no GPU is near it (issue 36, item 6). A few majors past the newest
    // known GPU stay plannable, for products the matrices do not list yet.
    int newest = 0;
    for (const auto& g : m_gpus) newest = std::max(newest, g.cc.major);
    if (c->major > newest + 3)
      return make_error(ErrorCode::invalid_input,
                        util::msg("--gpu '{}' is compute capability {}: no GPU is near it (the newest known is {}.x)", query,
                                  c->to_string(), newest),
                        util::msg("write the arch as sm_90 or 9.0 (major and one-digit minor), or a GPU name"));
    ResolvedGpu r{std::string(query), "planned " + c->sm_name(), "", *c, true};
    // A family name for a bare arch: any product of that compute capability. An arch only Jetson
    // parts have (8.7, 11.0) is a Tegra device even when written bare ("sm_87").
    bool any = false, all_tegra = true;
    for (const auto& g : m_gpus)
      if (g.cc.same_number(*c)) {
        if (r.family.empty()) r.family = g.family;
        any = true;
        all_tegra = all_tegra && g.cc.tegra;
      }
    if (any && all_tegra) r.cc.tegra = true;
    return r;
  }
  if (auto g = gpu(query))
    return ResolvedGpu{
        std::string(query), g->name, g->family, g->cc, false, fmt::format("{} ({})", g->source, to_string(g->confidence))};
  // Written as an arch but not one ("sm_90a", "9.x"): the arch parser's reason says what is wrong.
  if (auto bad = specs::ComputeCapability::parse(query);
      !bad && (query.starts_with("sm_") || query.starts_with("compute_") ||
               (!query.empty() && std::isdigit(static_cast<unsigned char>(query[0])))))
    return std::unexpected(bad.error());
  return make_error(
      ErrorCode::invalid_input, util::msg("unknown GPU '{}': not an arch (sm_120, 12.0) or a known GPU name", query),
      util::msg("run `envfix matrix` to list known GPUs; new products can be added in 'gpus:' of a --matrices override"));
}

std::optional<GpuProduct> Knowledge::gpu_for_soc(std::string_view soc) const {
  for (const auto& g : m_gpus)
    if (std::find(g.socs.begin(), g.socs.end(), soc) != g.socs.end()) return g;
  return std::nullopt;
}

const L4tRelease* Knowledge::l4t(std::string_view release) const {
  const L4tRelease* best = nullptr;
  for (const auto& r : m_l4t) {
    bool match = release == r.release ||
                 (release.starts_with(r.release) && release.size() > r.release.size() && release[r.release.size()] == '.');
    if (match && (!best || r.release.size() > best->release.size())) best = &r;
  }
  return best;
}

std::vector<const L4tRelease*> Knowledge::l4t_for(specs::ComputeCapability cc) const {
  std::vector<const L4tRelease*> out;
  if (!cc.tegra) return out;
  for (const auto& r : m_l4t)
    for (const auto& soc : r.socs)
      if (auto g = gpu_for_soc(soc); g && g->cc.same_number(cc)) {
        out.push_back(&r);
        break;
      }
  return out;
}

std::optional<specs::CudaVersion> Knowledge::cuda_for_driver(std::string_view driver) const {
  std::optional<specs::CudaVersion> best;
  for (const auto& t : m_toolkits) {
    if (t.min_driver_linux.empty()) continue;
    if (compare_driver_versions(driver, t.min_driver_linux) >= 0 && (!best || t.version > *best)) best = t.version;
  }
  return best;
}

std::optional<GpuProduct> Knowledge::gpu(std::string_view query) const {
  std::string q = normalize_gpu_name(query);
  if (q.empty()) return std::nullopt;
  // 1. Exact name or alias (later entries, i.e. overrides, win); then the longest name that prefixes
  // the query at a word boundary ("h100 80gb hbm3", "a100-sxm4-80gb": nvidia-smi's product strings).
  const GpuProduct* best = nullptr;
  std::size_t best_len = 0;
  auto keys_of = [](const GpuProduct& g) {
    std::vector<std::string> keys = {normalize_gpu_name(g.name)};
    for (const auto& a : g.aliases) keys.push_back(normalize_gpu_name(a));
    return keys;
  };
  // An alias is shared by every name of its entry ("1080 Ti" for the GTX 1050 to 1080 Ti): the name
  // it spells out wins (issue 36, item 6), else the first.
  const GpuProduct* alias_hit = nullptr;
  for (auto it = m_gpus.rbegin(); it != m_gpus.rend(); ++it) {
    const auto own = normalize_gpu_name(it->name);
    if (own == q) return *it;
    if (std::ranges::find(it->aliases, q, normalize_gpu_name) != it->aliases.end() &&
        (!alias_hit ||
         (words_in_order(words(q), words(own)) && !words_in_order(words(q), words(normalize_gpu_name(alias_hit->name))))))
      alias_hit = &*it;
  }
  if (alias_hit) return *alias_hit;
  for (auto it = m_gpus.rbegin(); it != m_gpus.rend(); ++it) {
    for (const auto& k : keys_of(*it)) {
      if (k.size() > best_len && q.size() > k.size() && q.starts_with(k) && (q[k.size()] == ' ' || q[k.size()] == '-')) {
        best = &*it;
        best_len = k.size();
      }
    }
  }
  if (best) return *best;
  // 2. As people type them: without spaces ("rtx5090", "gtx-1080"), or a subset of the words in order
  // ("jetson thor", "rtx 4090 ti" is not one: every query word must be there). Accepted only when every
  // product it matches has one compute capability.
  std::string qc = compact(q);
  auto qw = words(q);
  bool has_digit = std::any_of(q.begin(), q.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  // A product's own name before the aliases its entry shares with its siblings ("1080" is the GTX 1080,
  // not the GTX 1050 whose entry lists the alias "1080 Ti"), and the closest name before a longer one
  // ("1080" before "1080 Ti").
  const GpuProduct* found = nullptr;
  bool ambiguous = false;
  for (const bool own_name : {true, false}) {
    std::size_t found_len = 0;
    for (auto it = m_gpus.rbegin(); it != m_gpus.rend(); ++it) {
      auto keys = keys_of(*it);
      if (own_name)
        keys.resize(1);
      else
        keys.erase(keys.begin());
      for (const auto& k : keys) {
        bool hit = compact(k) == qc || (qw.size() >= 2 && words_in_order(qw, words(k))) ||
                   (qw.size() == 1 && has_digit && qw[0].size() >= 3 && words_in_order(qw, words(k)));
        if (!hit) continue;
        if (found && found->cc != it->cc) ambiguous = true;
        if (!found || k.size() < found_len) {
          found = &*it;
          found_len = k.size();
        }
      }
    }
    if (found) break;
  }
  if (found && !ambiguous) return *found;
  return std::nullopt;
}

FirstToolkit Knowledge::first_toolkit_for(specs::ComputeCapability cc) const {
  FirstToolkit out;
  const CudaToolkit* own = nullptr;
  const CudaToolkit* runs = nullptr;
  const CudaToolkit* oldest = nullptr;
  specs::GpuArch own_arch{specs::GpuArch::Kind::sass, cc.major, cc.minor};
  for (const auto& t : m_toolkits) {
    if (!oldest || t.version < oldest->version) oldest = &t;
    if (t.can_target(own_arch) && (!own || t.version < own->version)) own = &t;
    bool ok = std::any_of(t.sass.begin(), t.sass.end(), [&](const specs::GpuArch& a) { return a.runs_on(cc); });
    if (ok && (!runs || t.version < runs->version)) runs = &t;
  }
  out.toolkit = own ? own : runs;
  out.own_arch = own != nullptr;
  out.oldest_listed = out.toolkit && out.toolkit == oldest;
  return out;
}

std::optional<VariantGuess> Knowledge::understand_variant(std::string_view framework_name, std::string_view name) const {
  if (const Framework* f = framework(framework_name))
    if (const Variant* v = f->variant(name)) return VariantGuess{*v, true};
  Variant v;
  v.name = std::string(name);
  if (name == "cpu") {
    v.kind = "cpu";
    return VariantGuess{v, false};
  }
  // "cuNNN": the last digit is the minor (specs/cuda_version.hpp, from_variant).
  if (auto c = specs::CudaVersion::from_variant(name)) {
    v.kind = "cuda";
    v.cuda = *c;
    return VariantGuess{v, false};
  }
  return std::nullopt;
}

const SupportEnd* Knowledge::support_end(std::string_view framework_name, specs::ComputeCapability cc) const {
  const Framework* f = framework(framework_name);
  if (!f) return nullptr;
  const SupportEnd* best = nullptr;
  for (const auto& e : f->support_ends)
    if (cc < e.below && (!best || e.from < best->from)) best = &e;
  return best;
}

std::optional<LastRelease> Knowledge::last_release_for(std::string_view framework_name, specs::ComputeCapability cc,
                                                       std::string_view platform) const {
  const Framework* f = framework(framework_name);
  if (!f) return std::nullopt;
  const SupportEnd* end = support_end(framework_name, cc);
  std::optional<LastRelease> out;
  for (const auto& r : f->releases) {
    if (std::find(r.channels.begin(), r.channels.end(), "stable") == r.channels.end()) continue;
    for (const auto& v : r.versions) {
      if (end && v >= end->from) continue;
      if (out && v <= out->version) continue;
      for (const auto& b : variants_for(framework_name, v, platform))
        if (b.runs_on(cc) == RunKind::native) {
          out = LastRelease{v, b.variant, end};
          break;
        }
    }
  }
  return out;
}

std::optional<StableCover>
Knowledge::stable_covering(std::string_view framework_name, const std::vector<specs::ComputeCapability>& ccs,
                           std::string_view driver, std::string_view platform,
                           const std::function<bool(const specs::Version&, std::string_view)>& vetoed) const {
  const Framework* f = framework(framework_name);
  if (!f || ccs.empty()) return std::nullopt;
  std::optional<StableCover> out;
  for (const auto& r : f->releases) {
    if (std::find(r.channels.begin(), r.channels.end(), "stable") == r.channels.end()) continue;
    for (const auto& v : r.versions) {
      if (out && v <= out->version) continue;
      // Of the variants that qualify, the newest CUDA (what plan would choose for this driver).
      std::optional<specs::CudaVersion> best;
      for (const auto& b : variants_for(framework_name, v, platform)) {
        if (b.kind != "cuda" || !b.cuda || (best && *b.cuda <= *best)) continue;
        if (!driver.empty() && !driver_supports(driver, *b.cuda)) continue;
        if (vetoed && vetoed(v, b.variant)) continue;
        bool all = std::all_of(ccs.begin(), ccs.end(), [&](const auto& cc) { return b.runs_on(cc) == RunKind::native; });
        if (all) {
          out = StableCover{v, b.variant, b.verified};
          best = b.cuda;
        }
      }
    }
  }
  return out;
}

std::vector<VariantBuild> Knowledge::variants_for(std::string_view framework_name, const specs::Version& version,
                                                  std::string_view platform) const {
  std::vector<VariantBuild> out;
  const Framework* f = framework(framework_name);
  if (!f) return out;
  const Release* r = f->release(version);
  if (!r) return out;
  for (const auto& rv : r->variants) {
    const ArchBuild* b = rv.platform(platform);
    if (!b) continue; // not published for this platform
    const Variant* var = f->variant(rv.variant);
    VariantBuild vb;
    vb.variant = rv.variant;
    vb.kind = var ? var->kind : "cuda";
    vb.cuda = var ? var->cuda : std::nullopt;
    vb.platform = b->platform;
    vb.sass = b->sass;
    vb.ptx = b->ptx;
    vb.confidence = b->confidence;
    vb.verified = b->confidence == Confidence::verified && b->known();
    vb.source = b->source;
    vb.channels = r->channels;
    out.push_back(std::move(vb));
  }
  return out;
}

std::optional<std::string> Knowledge::companion_version(std::string_view framework_name, const specs::Version& version,
                                                        std::string_view companion) const {
  const Framework* f = framework(framework_name);
  if (!f) return std::nullopt;
  specs::Version pub = version.public_version();
  for (auto it = f->coupling.rbegin(); it != f->coupling.rend(); ++it) {
    if (it->version && *it->version == pub) {
      auto c = it->companions.find(std::string(companion));
      if (c == it->companions.end()) return std::nullopt;
      return c->second;
    }
  }
  if (!pub.is_devrelease() || !pub.dev()) return std::nullopt;
  for (auto it = f->coupling.rbegin(); it != f->coupling.rend(); ++it) {
    if (!it->nightly || it->nightly->base_version() != pub.base_version()) continue;
    auto c = it->companions.find(std::string(companion));
    if (c == it->companions.end()) return std::nullopt;
    if (f->nightly_coupling == "same-build-date") return fmt::format("{}.dev{}", c->second, *pub.dev());
    return c->second;
  }
  return std::nullopt;
}

int compare_driver_versions(std::string_view a, std::string_view b) { return util::compare_dotted_numbers(a, b); }

bool is_driver_version(std::string_view text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  bool prev_dot = false;
  for (char c : text) {
    if (c == '.') {
      if (prev_dot) return false;
      prev_dot = true;
    } else if (c >= '0' && c <= '9') {
      prev_dot = false;
    } else {
      return false;
    }
  }
  return true;
}

std::string normalize_gpu_name(std::string_view name) {
  std::string s;
  bool space = false;
  for (char c : name) {
    if (c == ' ' || c == '\t' || c == '_') {
      space = !s.empty();
      continue;
    }
    if (space) s += ' ';
    space = false;
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (bool again = true; again;) {
    again = false;
    for (std::string_view w : {"nvidia ", "geforce ", "tesla ", "quadro "}) {
      if (s.starts_with(w) && s.size() > w.size()) {
        s.erase(0, w.size());
        again = true;
      }
    }
  }
  return s;
}

Expected<void> check_driver_text(const std::string& driver, const Knowledge* k) {
  if (!is_driver_version(driver))
    return make_error(ErrorCode::invalid_input, util::msg("--driver '{}': not a driver version", driver),
                      util::msg("write it as nvidia-smi does, e.g. 570.86.10"));
  // Every Linux driver of a CUDA that matters has a three-digit major (CUDA 11.0 needs 450.36).
  if (driver.find('.') > 2) return {};
  const auto cuda = specs::CudaVersion::parse(driver);
  const auto needs = cuda && k ? k->min_driver(*cuda) : std::nullopt;
  return make_error(ErrorCode::invalid_input, util::msg("--driver '{}' is a CUDA version, not a driver version", driver),
                    needs
                        ? util::msg("pass the driver nvidia-smi reports (e.g. 570.86.10); CUDA {} needs a driver of at least {}",
                                    driver, *needs)
                        : util::msg("pass the driver nvidia-smi reports, e.g. 570.86.10"));
}

} // namespace envfix::matrices
