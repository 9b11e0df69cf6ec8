// Runs the doctor scenario corpus tests/scenarios/doctor/*.yaml through diagnosis::diagnose (diagnosis/diagnose.hpp)
// without the envfix binary and without a machine: host facts, installed distributions, the kernels
// of their binaries and the repro's outcome come from the YAML; the knowledge is the embedded
// matrices. Each file names the findings (codes) and the verdict doctor must reach
// (tests/scenarios/README.md, "Doctor scenarios").
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/doctor.hpp"
#include "probe/installed.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence())
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

// A YAML node as JSON (kernel profiles use their evidence-store JSON form, wheel/coverage.hpp).
nlohmann::json to_json(const YAML::Node& n) {
  if (n.IsSequence()) {
    auto a = nlohmann::json::array();
    for (const auto& x : n) a.push_back(to_json(x));
    return a;
  }
  if (n.IsMap()) {
    auto o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
    return o;
  }
  const auto s = n.as<std::string>();
  if (s == "true" || s == "false") return s == "true";
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::stoull(s);
  return s;
}

probe::HostFacts host_facts(const YAML::Node& s, const fs::path& records) {
  probe::HostFacts f;
  const auto host = s["host"];
  int i = 0;
  for (const auto& g : host["gpus"]) {
    probe::GpuInfo gi;
    gi.index = i++;
    gi.name = g["name"].as<std::string>();
    gi.cc = *specs::ComputeCapability::parse(g["arch"].as<std::string>());
    f.gpus.push_back(gi);
  }
  if (const auto d = host["driver"]) {
    probe::DriverInfo di{d["version"].as<std::string>(), std::nullopt, "scenario"};
    if (d["cuda"]) di.cuda = *specs::CudaVersion::parse(d["cuda"].as<std::string>());
    f.driver = di;
  }
  probe::PythonInfo py;
  const auto p = host["python"];
  const std::string version = p && p["version"] ? p["version"].as<std::string>() : "3.12.3";
  const bool system = p && p["env"] && p["env"].as<std::string>() == "system";
  py.prefix = system ? "/usr" : "/scenario/venv";
  py.base_prefix = "/usr";
  py.is_venv = !system;
  py.executable = py.prefix / "bin" / "python";
  py.version = *specs::Version::parse(version);
  py.implementation = "cpython";
  py.tag_env.major = static_cast<int>(py.version.release()[0]);
  py.tag_env.minor = static_cast<int>(py.version.release()[1]);
  py.externally_managed = p && p["externally_managed"] && p["externally_managed"].as<bool>();
  if (py.externally_managed) py.externally_managed_message = "this Python is managed by the distribution";
  // `records: true`: the dists get real RECORD files (under `records`), so that the repro's runs
  // are observed (diagnosis records a run only for a build whose RECORD it can read).
  if (!records.empty()) py.prefix = records;
  f.python = py;
  const fs::path site = py.prefix / "lib" / fmt::format("python{}.{}", py.tag_env.major, py.tag_env.minor) / "site-packages";
  for (const auto& d : s["installed"]) {
    probe::InstalledDist dist;
    dist.name = d["name"].as<std::string>();
    dist.version = *specs::Version::parse(d["version"].as<std::string>());
    dist.dist_info = site / fmt::format("{}-{}.dist-info", dist.name, dist.version.to_string());
    if (d["copy"]) dist.dist_info = site / d["copy"].as<std::string>() / dist.dist_info.filename();
    dist.installer = d["installer"] ? d["installer"].as<std::string>() : "pip";
    dist.has_record = !d["record"] || d["record"].as<bool>();
    for (const auto& r : strings(d["requires"])) dist.requires_dist.push_back(*specs::Requirement::parse(r));
    if (d["index"])
      dist.direct_url = fmt::format(R"({{"url": "{}/{}-{}.whl", "archive_info": {{}}}})", d["index"].as<std::string>(), dist.name,
                                    dist.version.to_string());
    if (!records.empty() && dist.has_record) {
      fs::create_directories(dist.dist_info);
      REQUIRE(util::write_file_atomic(dist.dist_info / "RECORD", dist.name + "/__init__.py,,\n", 0644));
    }
    f.installed.push_back(std::move(dist));
  }
  return f;
}

struct Outcome {
  std::vector<std::string> codes; // sorted unique
  std::string verdict, fix, messages;
};

Outcome run(const YAML::Node& s) {
  api::Options o;
  // Without `framework:` doctor uses the framework(s) installed, as the CLI does without --framework.
  o.detect_framework = !s["framework"];
  if (s["framework"]) o.framework = s["framework"].as<std::string>();
  diagnosis::DoctorInputs in;
  const fs::path records =
      s["records"] && s["records"].as<bool>() ? util::make_temp_dir({}, "envfix-scenario").value() : fs::path();
  in.facts = host_facts(s, records);
  auto k = matrices::Knowledge::load_default("");
  REQUIRE(k);
  in.knowledge = std::make_unique<matrices::Knowledge>(std::move(*k));
  // Kernels by project name: a list of files, each a kernel profile (groups of containers).
  std::map<std::string, std::vector<wheel::ProfiledFile>> kernels;
  if (const auto ks = s["kernels"])
    for (const auto& kv : ks)
      for (const auto& file : kv.second) {
        auto profile = wheel::KernelProfile::from_json(to_json(file));
        REQUIRE_MESSAGE(profile, profile.error().message);
        kernels[kv.first.as<std::string>()].push_back({file["path"].as<std::string>(), std::move(*profile)});
      }
  in.kernels = [kernels](const probe::InstalledDist& d) -> Expected<probe::InstalledKernels> {
    probe::InstalledKernels ik;
    if (auto it = kernels.find(d.normalized_name()); it != kernels.end()) ik.files = it->second;
    ik.scanned = ik.files.size();
    return ik;
  };
  // The repro: step A, then step B; "passed" or the error line the interpreter would print.
  if (const auto r = s["repro"]) {
    auto steps = std::make_shared<std::vector<std::string>>();
    for (const auto* step : {"step_a", "step_b"}) steps->push_back(r[step] ? r[step].as<std::string>() : "passed");
    in.run_steps = [steps](const std::vector<std::string>& codes) {
      std::vector<diagnosis::StepOutcome> outcomes; // up to the first failure, as diagnosis/report.hpp says
      for (std::size_t i = 0; i < codes.size() && (outcomes.empty() || outcomes.back().ok); ++i) {
        const auto& out = (*steps)[std::min(i, steps->size() - 1)];
        outcomes.push_back(out == "passed" ? diagnosis::StepOutcome{true, {}} : diagnosis::StepOutcome{false, out});
      }
      return outcomes;
    };
  }
  api::DoctorRequest req;
  auto rep = diagnosis::diagnose(api::diagnose_options(o, req), std::move(in));
  Outcome out;
  std::set<std::string> codes;
  for (const auto& f : rep.findings) {
    const std::string code(diagnosis::to_string(f.code));
    codes.insert(code);
    out.messages += code + ": " + f.message.text + (f.hint.empty() ? "" : " (hint: " + f.hint.text + ")") + "\n";
  }
  out.codes.assign(codes.begin(), codes.end());
  out.verdict = diagnosis::to_string(rep.verdict);
  out.fix = rep.fix;
  if (!records.empty()) fs::remove_all(records);
  return out;
}

} // namespace

TEST_SUITE("scenario/scenarios/doctor_scenarios") {

  TEST_CASE("doctor scenario corpus") {
    const fs::path dir = fs::path(ENVFIX_SOURCE_DIR) / "tests" / "scenarios" / "doctor";
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().extension() == ".yaml") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    CHECK(files.size() >= 10);
    for (const auto& f : files) {
      CAPTURE(f.filename().string());
      const YAML::Node s = YAML::LoadFile(f.string());
      const auto expect = s["expect"];
      REQUIRE(expect);
      const auto out = run(s);
      CAPTURE(out.messages);
      auto want = strings(expect["findings"]);
      std::sort(want.begin(), want.end());
      CHECK(util::join(out.codes, " ") == util::join(want, " "));
      CHECK(out.verdict == expect["verdict"].as<std::string>());
      if (expect["fix"]) CHECK(out.fix == expect["fix"].as<std::string>());
      if (expect["no_fix"]) CHECK(out.fix.empty());
      for (const auto& m : strings(expect["message_contains"])) CHECK_MESSAGE(out.messages.find(m) != std::string::npos, m);
    }
  }

} // TEST_SUITE
