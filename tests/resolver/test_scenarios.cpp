// Runs the YAML scenario corpus tests/scenarios/*.yaml through the resolver via MemoryProviders:
// host + fixture framework data + index + installed set + request → expected plan or error.
// The format is described in tests/scenarios/README.md.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "resolver/discovery.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "resolver/memory_provider.hpp"
#include "resolver/plan.hpp"
#include "specs/name.hpp"
#include "tests/resolver/resolver_test_support.hpp"

namespace resolver_scenarios_test {

namespace fs = std::filesystem;
using namespace envfix;
using namespace envfix::resolver;

namespace {

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n)
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

void add_file(MemoryProvider& p, const YAML::Node& f) {
  std::string file = f.IsScalar() ? f.as<std::string>() : f["file"].as<std::string>();
  std::string rp = f.IsMap() && f["requires_python"] ? f["requires_python"].as<std::string>() : "";
  std::vector<std::string> deps = f.IsMap() ? strings(f["requires"]) : std::vector<std::string>{};
  auto wf = specs::WheelFilename::parse(file);
  REQUIRE_MESSAGE(wf.has_value(), file);
  index::Candidate c;
  c.filename = file;
  c.project = wf->normalized_name();
  if (!(f.IsMap() && f["hash"] && !f["hash"].as<bool>())) c.sha256 = std::string(64, 'a');
  if (f.IsMap() && f["yanked"]) c.yanked = f["yanked"].as<bool>();
  if (f.IsMap() && f["yanked_reason"]) c.yanked_reason = f["yanked_reason"].as<std::string>();
  if (f.IsMap() && f["index_requires_python"]) c.requires_python = f["index_requires_python"].as<std::string>();
  c.size = f.IsMap() && f["size"] ? f["size"].as<std::uint64_t>() : 1000;
  std::string md = fmt::format("Metadata-Version: 2.1\nName: {}\nVersion: {}\n", wf->name, wf->version.to_string());
  if (!rp.empty()) md += "Requires-Python: " + rp + "\n";
  for (const auto& e : strings(f.IsMap() ? f["extras"] : YAML::Node())) md += "Provides-Extra: " + e + "\n";
  for (const auto& r : deps) md += "Requires-Dist: " + r + "\n";
  p.add(std::move(c), md);
}

struct Outcome {
  int exit = 0;
  std::string error;
  Plan plan;
};

Outcome run_scenario(const YAML::Node& s) {
  const auto host = s["host"];
  std::string py = host && host["python"] ? host["python"].as<std::string>() : "3.11.7";
  auto pv = *specs::Version::parse(py);
  int glibc = host && host["glibc"] ? std::stoi(host["glibc"].as<std::string>().substr(2)) : 36;
  HostTarget target;
  target.python = test::cpython_linux(static_cast<int>(pv.release().at(1)), glibc, py);
  for (const auto& g : strings(host ? host["gpus"] : YAML::Node())) target.gpus.push_back(*specs::ComputeCapability::parse(g));
  if (host && host["driver"]) target.driver_version = host["driver"].as<std::string>();
  if (host && host["driver_cuda"]) {
    auto max = *specs::CudaVersion::parse(host["driver_cuda"].as<std::string>());
    target.driver_supports = [max](const specs::CudaVersion& c) { return c <= max; };
  }
  if (host && host["no_driver"] && host["no_driver"].as<bool>()) // as resolver/knowledge_adapter.cpp: GPUs, no driver
    target.driver_supports = [](const specs::CudaVersion&) { return false; };
  if (host && host["driver_compat"]) {
    // Minor-version compatibility: the driver also runs builds up to this CUDA, but not natively.
    auto native = target.driver_supports;
    auto max = *specs::CudaVersion::parse(host["driver_compat"].as<std::string>());
    target.driver_supports = [max](const specs::CudaVersion& c) { return c <= max; };
    target.driver_native = native;
  }
  const auto opt = s["options"];
  auto flag = [&](const char* k) { return opt && opt[k] && opt[k].as<bool>(); };

  std::vector<InstalledPackage> installed;
  std::vector<std::string> installed_names;
  for (const auto& i : s["installed"]) {
    std::string text = i.IsScalar() ? i.as<std::string>() : i["dist"].as<std::string>();
    auto eq = text.find("==");
    InstalledPackage p{specs::normalize_name(text.substr(0, eq)), *specs::Version::parse(text.substr(eq + 2)), {}};
    if (i.IsMap())
      for (const auto& r : strings(i["requires"])) p.requires_dist.push_back(*specs::Requirement::parse(r));
    installed_names.push_back(p.name);
    installed.push_back(std::move(p));
  }
  std::vector<specs::Requirement> request = test::reqs(strings(s["request"]));

  std::map<std::string, std::unique_ptr<MemoryProvider>> providers;
  auto provider = [&](const std::string& key) -> MemoryProvider& {
    auto& p = providers[key];
    if (!p) {
      p = std::make_unique<MemoryProvider>("https://index.test/" + key);
      if (s["index"]) // a scenario may list only `common:` files
        for (const auto& f : s["index"][key]) add_file(*p, f);
      for (const auto& f : s["common"]) add_file(*p, f);
    }
    return *p;
  };

  Outcome out;
  if (!s["framework"]) {
    ResolveOptions o;
    o.target = target.python;
    o.allow_unhashed = flag("allow_unhashed");
    if (flag("pre")) o.prereleases = PrereleasePolicy::allow;
    Resolver r(provider("default"), o);
    auto res = r.resolve(request);
    if (!res) {
      out.exit = 1;
      out.error = res.error().render();
      return out;
    }
    PlanInputs in{&*res, installed, {}, {"nvidia-"}};
    out.plan = make_plan(in);
    out.plan.index = "https://index.test/default";
    return out;
  }
  const auto fw = s["framework"];
  FrameworkSpec spec;
  spec.name = spec.main_package = fw["main"].as<std::string>();
  spec.companions = strings(fw["companions"]);
  for (const auto& i : fw["indexes"]) {
    FrameworkIndex idx{i["channel"].as<std::string>(), i["variant"].as<std::string>(), std::nullopt, ""};
    if (auto c = specs::CudaVersion::from_variant(idx.variant)) idx.cuda = *c;
    if (i["cuda"]) idx.cuda = *specs::CudaVersion::parse(i["cuda"].as<std::string>());
    // The variant's GPU package set (matrices/README.md, `variants`).
    if (i["extra"]) idx.extra = i["extra"].as<std::string>();
    if (i["main"]) idx.main_package = i["main"].as<std::string>();
    idx.packages = strings(i["packages"]);
    idx.kernels = strings(i["kernels"]);
    if (i["ptx_isa"]) idx.ptx_isa = i["ptx_isa"].as<std::string>();
    idx.url = "https://index.test/" + idx.channel + "/" + idx.variant;
    spec.indexes.push_back(idx);
  }
  std::map<std::string, std::vector<specs::GpuArch>> archs;
  for (const auto& a : fw["archs"]) {
    std::vector<specs::GpuArch> list;
    for (const auto& x : strings(a.second)) list.push_back(*specs::GpuArch::parse(x));
    archs[a.first.as<std::string>()] = list;
  }
  spec.archs = [archs](const specs::Version& v, std::string_view variant) -> std::optional<std::vector<specs::GpuArch>> {
    for (auto key : {v.public_version().to_string(), std::string("*")}) {
      auto it = archs.find(key + "/" + std::string(variant));
      if (it != archs.end()) return it->second;
    }
    return std::nullopt;
  };
  // What binaries said (evidence beats the `archs` table above).
  std::map<wheel::BuildKey, BuildFacts> evidence;
  for (auto& e : test::scenario_evidence(s["evidence"])) evidence[e.key] = BuildFacts{std::move(e.files), std::move(e.source)};
  if (!evidence.empty())
    spec.evidence = [evidence](const index::Candidate&, const specs::WheelFilename& wf,
                               std::string_view variant) -> std::optional<BuildFacts> {
      auto it = evidence.find(wheel::build_key(wf, variant));
      if (it == evidence.end()) return std::nullopt;
      return it->second;
    };
  std::map<std::string, std::map<std::string, std::string>> couple;
  for (const auto& c : fw["couple"])
    for (const auto& x : c.second) couple[c.first.as<std::string>()][x.first.as<std::string>()] = x.second.as<std::string>();
  spec.companion_version = [couple](const specs::Version& v, std::string_view comp) -> std::optional<std::string> {
    auto it = couple.find(v.to_string());
    if (it == couple.end()) return std::nullopt;
    auto jt = it->second.find(std::string(comp));
    if (jt == it->second.end()) return std::nullopt;
    return jt->second;
  };
  for (const auto& e : fw["support_ends"])
    spec.support_ends.push_back(SupportEndInfo{
        *specs::Version::parse(e["from"].as<std::string>()), *specs::ComputeCapability::parse(e["below"].as<std::string>()),
        e["variant"] ? e["variant"].as<std::string>() : "", e["source"] ? e["source"].as<std::string>() : "tests/scenarios"});
  {
    // Variant discovery: a channel's aggregate index (key "<channel>") may offer variants the
    // fixture's `indexes` do not list; they are read with the embedded matrices, as the binary does.
    static const auto embedded = matrices::Knowledge::load_embedded();
    REQUIRE(embedded);
    std::set<std::string> chans;
    for (const auto& i : spec.indexes) chans.insert(i.channel);
    std::vector<DiscoverySource> sources;
    for (const auto& c : chans)
      sources.push_back(
          {c, "https://index.test/" + c, [c](std::string_view v) { return "https://index.test/" + c + "/" + std::string(v); }});
    const std::string base = "https://index.test/";
    discover_indexes(spec, sources, variant_describer(*embedded, "torch"),
                     [&](const std::string& url) -> CandidateProvider& { return provider(url.substr(base.size())); });
  }
  FrameworkRequest req = split_request(spec, request, installed_names);
  if (opt && opt["channel"]) req.channel = opt["channel"].as<std::string>();
  if (opt && opt["variant"]) req.variant = opt["variant"].as<std::string>();
  req.allow_cpu = flag("allow_cpu");
  req.allow_unhashed = flag("allow_unhashed");
  auto choice = select_framework_set(
      spec, target, req, [&](const FrameworkIndex& i) -> CandidateProvider& { return provider(i.channel + "/" + i.variant); });
  if (!choice) {
    out.exit = 1;
    out.error = choice.error().render();
    return out;
  }
  PlanInputs in{&choice->resolution, installed, framework_packages(spec), {"nvidia-"}};
  out.plan = make_plan(in);
  out.plan.channel = choice->index.channel;
  out.plan.variant = choice->index.variant;
  out.plan.index = choice->index.url;
  out.plan.why = choice->why;
  out.plan.warnings.insert(out.plan.warnings.begin(), choice->warnings.begin(), choice->warnings.end()); // as api/plan.cpp
  out.plan.rejected.insert(out.plan.rejected.begin(), choice->rejected.begin(), choice->rejected.end());
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void check_scenario(const fs::path& file) {
  YAML::Node s = YAML::LoadFile(file.string());
  Outcome o = run_scenario(s);
  const auto e = s["expect"];
  int exit = e["exit"] ? e["exit"].as<int>() : 0;
  INFO(fmt::format("error: {}\nwhy: {}", o.error, o.plan.why.text));
  CHECK(o.exit == exit);
  for (const auto& t : strings(e["error_contains"])) CHECK_MESSAGE(o.error.find(t) != std::string::npos, t);
  for (const auto& t : strings(e["error_lacks"])) CHECK_MESSAGE(o.error.find(t) == std::string::npos, t);
  if (o.exit != 0) return;
  if (e["channel"]) CHECK(o.plan.channel == e["channel"].as<std::string>());
  if (e["variant"]) CHECK(o.plan.variant == e["variant"].as<std::string>());
  std::vector<std::string> install, remove;
  for (const auto& i : o.plan.install) install.push_back(i.name + "==" + i.version);
  for (const auto& r : o.plan.remove) remove.push_back(r.name + "==" + r.version.to_string());
  if (e["install"]) CHECK(sorted(install) == sorted(strings(e["install"])));
  if (e["remove"]) CHECK(sorted(remove) == sorted(strings(e["remove"])));
  if (e["keep"]) CHECK(sorted(o.plan.keep) == sorted(strings(e["keep"])));
  for (const auto& want : strings(e["rejected"])) {
    bool found = std::any_of(o.plan.rejected.begin(), o.plan.rejected.end(), [&](const Rejection& r) {
      return fmt::format("{} {} {}", r.name, r.version, to_string(r.reason)) == want;
    });
    CHECK_MESSAGE(found, "rejection not reported: ", want);
  }
  for (const auto& t : strings(e["warnings_contains"])) {
    bool found = std::any_of(o.plan.warnings.begin(), o.plan.warnings.end(),
                             [&](const util::Message& w) { return w.text.find(t) != std::string::npos; });
    CHECK_MESSAGE(found, "warning missing: ", t);
  }
  for (const auto& t : strings(e["why_contains"]))
    CHECK_MESSAGE(o.plan.why.text.find(t) != std::string::npos, "summary lacks: ", t);
  for (const auto& t : strings(e["why_excludes"]))
    CHECK_MESSAGE(o.plan.why.text.find(t) == std::string::npos, "summary says: ", t);
}

} // namespace

TEST_SUITE("scenario/resolver/scenarios") {

  // Issue 42 item 7b (PEP 592): `==` may choose a yanked file, and the plan says why it was yanked;
  // unpinned, a yanked build or dependency stays excluded (16-*, 17-*).
  TEST_CASE("round3 7b: a yanked build pinned with == installs with its yank reason; unpinned it stays excluded") {
    const fs::path dir = fs::path(ENVFIX_SOURCE_DIR) / "tests" / "scenarios";
    for (const char* f :
         {"77-yanked-pinned-exactly-installs-with-reason.yaml", "16-yanked-framework-build.yaml", "17-yanked-dependency.yaml"}) {
      CAPTURE(f);
      check_scenario(dir / f);
    }
  }

  TEST_CASE("scenario corpus") {
    fs::path dir = fs::path(ENVFIX_SOURCE_DIR) / "tests" / "scenarios";
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().extension() == ".yaml") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    CHECK(files.size() >= 40);
    for (const auto& f : files) {
      CAPTURE(f.filename().string());
      try {
        check_scenario(f);
      } catch (const YAML::Exception& ex) {
        FAIL("bad scenario YAML: " << ex.what());
      }
    }
  }
}

} // namespace resolver_scenarios_test
