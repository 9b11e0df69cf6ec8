// Runs the YAML scenario corpus tests/scenarios/*.yaml through the real `envfix plan` binary
// (ENVFIX_BIN): every scenario's index becomes real wheels in a PEP 503 tree (tests/support/
// index_builder.py, one Python process for the whole corpus), one nginx serves all of them over
// HTTPS with the test CA, the `framework:` block becomes a matrices override (--matrices DIR), the
// installed set becomes dist-info folders in a real venv (--python), and the host facts become
// --gpu/--driver/--python-version/--platform. The JSON plan (or the error on stderr) is checked
// against `expect:` exactly as tests/resolver/test_scenarios.cpp checks the in-memory resolution.
//
// What the CLI cannot express is said in the output and in tests/scenarios/README.md:
// - host.driver_cuda: the binary derives what a driver runs from --driver and the matrices' CUDA
//   toolkit table (minimum driver of each toolkit, docs/architecture.md, Choosing the framework
//   set, step 1).
// - per-file `size`: the wheels are real, so sizes are whatever the builder wrote.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "specs/cuda_version.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "tests/resolver/resolver_test_support.hpp"
#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "tests/support/envfix_bin.hpp"

namespace resolver_scenarios_cli_test {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace envfix;

namespace {

using envfix::testing::envfix_bin;

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n)
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// One index_builder package entry for a scenario file ("torch-2.7.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"
// or {file: …, requires: […], requires_python, index_requires_python, yanked, hash: false, extras}).
json builder_package(const YAML::Node& f) {
  std::string file = f.IsScalar() ? f.as<std::string>() : f["file"].as<std::string>();
  std::string stem = file.substr(0, file.size() - 4);
  std::vector<std::string> parts;
  for (std::size_t i = 0, j; i <= stem.size(); i = j + 1) {
    j = stem.find('-', i);
    if (j == std::string::npos) j = stem.size();
    parts.push_back(stem.substr(i, j - i));
  }
  REQUIRE_MESSAGE((parts.size() == 5 || parts.size() == 6), file);
  json p{{"name", parts[0]},
         {"version", parts[1]},
         {"compress", false},
         {"tags", json::array({parts[parts.size() - 3] + "-" + parts[parts.size() - 2] + "-" + parts.back()})}};
  if (parts.size() == 6) p["build"] = parts[2];
  p["index_requires_python"] = nullptr;
  if (f.IsMap()) {
    if (f["requires"]) p["requires_dist"] = strings(f["requires"]);
    if (f["requires_python"]) p["requires_python"] = f["requires_python"].as<std::string>();
    if (f["index_requires_python"]) p["index_requires_python"] = f["index_requires_python"].as<std::string>();
    if (f["yanked"] && f["yanked"].as<bool>()) p["yanked"] = true;
    if (f["yanked"] && f["yanked"].as<bool>() && f["yanked_reason"]) p["yanked"] = f["yanked_reason"].as<std::string>();
    if (f["hash"] && !f["hash"].as<bool>()) p["omit_hash"] = true;
    if (f["extras"]) p["provides_extra"] = strings(f["extras"]);
  }
  return p;
}

// The builder spec for index `key` ("stable/cu128", "default") of a scenario: its files plus `common`.
json index_spec(const YAML::Node& s, const std::string& key) {
  json pkgs = json::array();
  std::set<std::string> seen;
  auto add = [&](const YAML::Node& list) {
    if (!list) return;
    for (const auto& f : list) {
      std::string file = f.IsScalar() ? f.as<std::string>() : f["file"].as<std::string>();
      if (seen.insert(file).second) pkgs.push_back(builder_package(f));
    }
  };
  if (s["index"]) add(s["index"][key]); // a scenario may list only `common:` files
  add(s["common"]);
  std::string files_dir = "files-" + key;
  std::replace(files_dir.begin(), files_dir.end(), '/', '-');
  return json{{"packages", pkgs}, {"html", true}, {"json", false}, {"simple_dir", key}, {"files_dir", files_dir}};
}

// The scenario's `framework:` block as a matrices override (schema: matrices/README.md). The
// framework is named "scenario" (selected with --framework scenario) so the embedded torch stays.
std::string matrices_yaml(const YAML::Node& fw) {
  std::vector<std::string> channels, variants;
  for (const auto& i : fw["indexes"]) {
    auto c = i["channel"].as<std::string>(), v = i["variant"].as<std::string>();
    if (std::find(channels.begin(), channels.end(), c) == channels.end()) channels.push_back(c);
    if (std::find(variants.begin(), variants.end(), v) == variants.end()) variants.push_back(v);
  }
  std::map<std::string, std::vector<std::string>> archs; // "2.7.0/cu128" → list
  std::set<std::string> versions;
  for (const auto& a : fw["archs"]) {
    auto key = a.first.as<std::string>();
    archs[key] = strings(a.second);
    auto v = key.substr(0, key.find('/'));
    if (v != "*") versions.insert(v);
  }
  for (const auto& c : fw["couple"]) versions.insert(c.first.as<std::string>());

  YAML::Node f;
  f["main_package"] = fw["main"].as<std::string>();
  f["companions"] = YAML::Node(YAML::NodeType::Sequence);
  for (const auto& c : strings(fw["companions"])) f["companions"].push_back(c);
  f["default_mirror"] = "https://mirror.invalid";
  for (const auto& c : channels) f["channels"][c] = "{mirror}/" + c + "/{variant}";
  f["nightly_coupling"] = "same-build-date";
  f["source"] = "tests/scenarios";
  for (const auto& v : variants) {
    if (auto cuda = specs::CudaVersion::from_variant(v))
      f["variants"][v]["cuda"] = cuda->to_string();
    else
      f["variants"][v]["kind"] = "cpu";
  }
  // The variant's GPU package set, as matrices/README.md writes it under `variants`.
  for (const auto& i : fw["indexes"]) {
    auto v = f["variants"][i["variant"].as<std::string>()];
    if (i["cuda"]) {
      v.remove("kind");
      v["cuda"] = i["cuda"].as<std::string>();
    }
    if (i["extra"]) v["extra"] = i["extra"].as<std::string>();
    if (i["main"]) v["main_package"] = i["main"].as<std::string>();
    for (const char* k : {"packages", "kernels"})
      if (i[k]) v[k] = i[k];
  }
  f["smoke"]["step_a"] = "pass";
  f["smoke"]["step_b"] = "pass";
  for (const auto& c : strings(fw["companions"])) f["smoke"]["companions"][c] = "pass";
  auto build = [&](const std::string& version) {
    YAML::Node vs;
    for (const auto& v : variants) {
      YAML::Node b;
      auto it = archs.find(version + "/" + v);
      if (it == archs.end()) it = archs.find("*/" + v);
      if (it != archs.end()) {
        b["sass"] = YAML::Node(YAML::NodeType::Sequence);
        b["ptx"] = YAML::Node(YAML::NodeType::Sequence);
        for (const auto& a : it->second) b[a.starts_with("compute_") ? "ptx" : "sass"].push_back(a);
        b["confidence"] = "verified";
      } else {
        b["confidence"] = "unverified"; // no sass/ptx: unknown → arch-unverified
      }
      b["source"] = "tests/scenarios";
      vs[v]["linux_x86_64"] = b;
    }
    return vs;
  };
  auto row = [&](YAML::Node r, const std::string& version) {
    for (const auto& c : channels) r["channels"].push_back(c);
    for (const auto& py : {"cp38", "cp39", "cp310", "cp311", "cp312", "cp313"}) r["python"].push_back(py);
    r["source"] = "tests/scenarios";
    r["variants"] = build(version);
    f["releases"].push_back(r);
  };
  for (const auto& v : versions) {
    YAML::Node r;
    r["versions"].push_back(v);
    row(r, v);
  }
  YAML::Node any;
  any["range"] = ">=0.0.dev0";
  row(any, "*");
  auto companions = strings(fw["companions"]);
  for (const auto& c : fw["couple"]) {
    YAML::Node r;
    r["version"] = c.first.as<std::string>();
    for (const auto& x : c.second) // couplings of packages that are not companions are never consulted
      if (std::find(companions.begin(), companions.end(), x.first.as<std::string>()) != companions.end())
        r["companions"][x.first.as<std::string>()] = x.second.as<std::string>();
    if (!r["companions"]) continue;
    r["source"] = "tests/scenarios";
    f["coupling"].push_back(r);
  }
  for (const auto& e : fw["support_ends"]) {
    YAML::Node r;
    r["from"] = e["from"].as<std::string>();
    r["below"] = e["below"].as<std::string>();
    auto v = e["variant"] ? e["variant"].as<std::string>() : "";
    if (std::find(variants.begin(), variants.end(), v) != variants.end()) r["variant"] = v;
    r["confidence"] = "secondary";
    r["source"] = e["source"] ? e["source"].as<std::string>() : "tests/scenarios";
    f["support_ends"].push_back(r);
  }
  YAML::Node root;
  root["schema"] = 1;
  root["frameworks"]["scenario"] = f;
  YAML::Emitter e;
  e << root;
  return std::string(e.c_str()) + "\n";
}

struct Corpus {
  fs::path root, venv_python, site_packages, cache;
  std::unique_ptr<testing::NginxServer> nginx;
  std::vector<std::pair<std::string, YAML::Node>> scenarios; // id, document
};

void write_installed(const Corpus& c, const YAML::Node& s) {
  for (const auto& e : fs::directory_iterator(c.site_packages)) fs::remove_all(e.path());
  for (const auto& i : s["installed"]) {
    std::string text = i.IsScalar() ? i.as<std::string>() : i["dist"].as<std::string>();
    auto eq = text.find("==");
    std::string name = text.substr(0, eq), version = text.substr(eq + 2);
    std::string md = fmt::format("Metadata-Version: 2.1\nName: {}\nVersion: {}\n", name, version);
    if (i.IsMap())
      for (const auto& r : strings(i["requires"])) md += "Requires-Dist: " + r + "\n";
    std::string dir_name = fmt::format("{}-{}.dist-info", specs::normalize_name(name), version);
    std::replace(dir_name.begin(), dir_name.begin() + static_cast<std::ptrdiff_t>(dir_name.find('-')), '-', '_');
    fs::path d = c.site_packages / dir_name;
    fs::create_directories(d);
    REQUIRE(util::write_file_atomic(d / "METADATA", md).has_value());
    REQUIRE(util::write_file_atomic(d / "INSTALLER", "pip\n").has_value());
    REQUIRE(util::write_file_atomic(d / "RECORD", fmt::format("{0}/METADATA,,\n{0}/INSTALLER,,\n{0}/RECORD,,\n", dir_name))
                .has_value());
  }
}

struct CliOutcome {
  int exit = -1;
  json plan;
  std::string err, out;
  std::string base; // this scenario's URL prefix on nginx
  std::vector<std::string> args;
};

CliOutcome run_cli(const Corpus& c, const std::string& id, const YAML::Node& s) {
  const auto host = s["host"];
  // A scenario with `evidence:` gets a cache of its own holding it, as the kernel gate would have
  // written it (wheel/kernel_evidence.hpp); the others share one.
  fs::path cache = c.cache;
  if (s["evidence"]) {
    cache = c.root / ("cache-" + id);
    wheel::EvidenceStore store(cache / wheel::evidence_dir_name, "test secret");
    // Keyed by the sha256 of the file read (wheel/kernel_evidence.hpp): one record per copy of the
    // scenario's file in its indexes.
    auto evidence = resolver::test::scenario_evidence(s["evidence"]);
    for (std::size_t i = 0; i < evidence.size(); ++i) {
      const auto name = s["evidence"][i]["file"].as<std::string>();
      int copies = 0;
      for (const auto& f : fs::recursive_directory_iterator(c.root / "www" / id))
        if (f.path().filename() == name) {
          evidence[i].sha256 = util::sha256_file_hex(f.path()).value();
          REQUIRE(store.put_build(evidence[i]).has_value());
          ++copies;
        }
      REQUIRE_MESSAGE(copies > 0, name);
    }
  }
  std::vector<std::string> args{envfix_bin().string(),  "plan",        "--format",    "json", "--no-progress", "--python",
                                c.venv_python.string(), "--cache-dir", cache.string()};
  for (const auto& r : strings(s["request"])) args.push_back(r);
  auto gpus = strings(host ? host["gpus"] : YAML::Node());
  if (gpus.empty()) args.insert(args.end(), {"--gpu", "none"});
  for (const auto& g : gpus) args.insert(args.end(), {"--gpu", g});
  if (host && host["driver"]) args.insert(args.end(), {"--driver", host["driver"].as<std::string>()});
  std::string py = host && host["python"] ? host["python"].as<std::string>() : "3.11.7";
  args.insert(args.end(), {"--python-version", py});
  std::string glibc = host && host["glibc"] ? host["glibc"].as<std::string>() : "2.36";
  std::replace(glibc.begin(), glibc.end(), '.', '_');
  args.insert(args.end(), {"--platform", "manylinux_" + glibc + "_x86_64"});
  const auto opt = s["options"];
  auto flag = [&](const char* k) { return opt && opt[k] && opt[k].as<bool>(); };
  if (flag("allow_cpu")) args.push_back("--allow-cpu");
  if (flag("allow_unhashed")) args.push_back("--allow-unhashed");
  if (flag("pre")) args.push_back("--pre");
  const std::string base = c.nginx->https_url() + "/" + id;
  if (s["framework"]) {
    args.insert(args.end(), {"--framework", "scenario", "--matrices", (c.root / "matrices" / id).string(), "--mirror", base});
    if (opt && opt["channel"]) args.insert(args.end(), {"--channel", opt["channel"].as<std::string>()});
    if (opt && opt["variant"]) args.insert(args.end(), {"--variant", opt["variant"].as<std::string>()});
  } else {
    args.insert(args.end(), {"--index-url", base + "/default"});
  }
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(300);
  o.set_env = {{"NO_COLOR", "1"}, {"ENVFIX_NO_NVML", "1"}, {"SSL_CERT_FILE", c.nginx->ca_file().string()}};
  o.unset_env = {"ENVFIX_MATRICES", "ENVFIX_GPU",   "ENVFIX_DRIVER",      "ENVFIX_INDEX_URL", "ENVFIX_MIRROR", "ENVFIX_OFFLINE",
                 "VIRTUAL_ENV",     "CONDA_PREFIX", "REQUESTS_CA_BUNDLE", "https_proxy",      "http_proxy"};
  auto r = util::run_process(args, o);
  REQUIRE(r.has_value());
  CliOutcome out;
  out.args = args;
  out.exit = r->timed_out ? -2 : r->exit_code;
  out.err = r->err;
  out.out = r->out;
  out.base = base;
  if (out.exit == 0) {
    try {
      out.plan = json::parse(r->out);
    } catch (const json::exception& ex) {
      FAIL("plan JSON does not parse: " << ex.what() << "\n" << r->out);
    }
  }
  return out;
}

void check(const Corpus& c, const std::string& id, const YAML::Node& s) {
  CliOutcome o = run_cli(c, id, s);
  std::string cmd;
  for (const auto& a : o.args) cmd += (cmd.empty() ? "" : " ") + a;
  INFO("command: ", cmd);
  INFO("stderr: ", o.err);
  const auto e = s["expect"];
  int exit = e["exit"] ? e["exit"].as<int>() : 0;
  CHECK(o.exit == exit);
  for (auto t : strings(e["error_contains"])) {
    // The in-memory runner's index URLs are https://index.test/<channel>/<variant>; here they are on nginx.
    if (auto at = t.find("https://index.test/"); at != std::string::npos) t.replace(at, 19, o.base + "/");
    // The fixture framework is called "scenario" in the override (the embedded torch stays as it is).
    if (s["framework"])
      if (auto fw = "no " + s["framework"]["main"].as<std::string>() + " index"; t.find(fw) != std::string::npos)
        t.replace(t.find(fw), fw.size(), "no scenario index");
    CHECK_MESSAGE(o.err.find(t) != std::string::npos, "error lacks: ", t);
  }
  for (const auto& t : strings(e["error_lacks"])) CHECK_MESSAGE(o.err.find(t) == std::string::npos, "error has: ", t);
  if (o.exit == 1) {
    // --format json also gives the error as a document on stdout, with the causes as a list.
    auto j = json::parse(o.out, nullptr, false);
    CHECK_MESSAGE((!j.is_discarded() && j.contains("error") && j["error"]["causes"].is_array() &&
                   !j["error"]["message"].get<std::string>().empty()),
                  "no JSON error document: ", o.out);
  }
  if (o.exit != 0 || exit != 0) return;
  const json& p = o.plan;
  if (e["channel"]) CHECK(p.value("channel", "") == e["channel"].as<std::string>());
  if (e["variant"]) CHECK(p.value("variant", "") == e["variant"].as<std::string>());
  std::vector<std::string> install, remove, keep;
  for (const auto& i : p["install"]) install.push_back(i["name"].get<std::string>() + "==" + i["version"].get<std::string>());
  for (const auto& r : p["remove"]) remove.push_back(r["name"].get<std::string>() + "==" + r["version"].get<std::string>());
  for (const auto& k : p["keep"]) keep.push_back(k.get<std::string>());
  if (e["install"]) CHECK(sorted(install) == sorted(strings(e["install"])));
  if (e["remove"]) CHECK(sorted(remove) == sorted(strings(e["remove"])));
  if (e["keep"]) CHECK(sorted(keep) == sorted(strings(e["keep"])));
  for (const auto& want : strings(e["rejected"])) {
    bool found = std::any_of(p["rejected"].begin(), p["rejected"].end(), [&](const json& r) {
      return fmt::format("{} {} {}", r["name"].get<std::string>(), r["version"].get<std::string>(),
                         r["reason"].get<std::string>()) == want;
    });
    CHECK_MESSAGE(found, "rejection not reported: ", want);
  }
  for (const auto& t : strings(e["warnings_contains"])) {
    bool found = std::any_of(p["warnings"].begin(), p["warnings"].end(),
                             [&](const json& w) { return w.get<std::string>().find(t) != std::string::npos; });
    CHECK_MESSAGE(found, "warning missing: ", t);
  }
  const std::string why = p.value("why", "");
  for (const auto& t : strings(e["why_contains"])) CHECK_MESSAGE(why.find(t) != std::string::npos, "summary lacks: ", t);
  for (const auto& t : strings(e["why_excludes"])) CHECK_MESSAGE(why.find(t) == std::string::npos, "summary says: ", t);
}

} // namespace

TEST_SUITE("scenario/resolver/scenarios_cli") {

  TEST_CASE("scenario corpus through nginx and the real `envfix plan`") {
    REQUIRE_MESSAGE(fs::exists(envfix_bin()), "envfix binary not built: ", envfix_bin().string());
    auto t0 = std::chrono::steady_clock::now();
    Corpus c;
    c.root = util::make_temp_dir({}, "envfix-scenarios").value();
    fs::path dir = fs::path(ENVFIX_SOURCE_DIR) / "tests" / "scenarios";
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().extension() == ".yaml") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 40);

    // Every index of every scenario, built by one Python process.
    json jobs = json::array();
    for (const auto& f : files) {
      std::string id = f.stem().string();
      YAML::Node s = YAML::LoadFile(f.string());
      std::vector<std::string> keys;
      if (s["framework"]) {
        for (const auto& i : s["framework"]["indexes"])
          keys.push_back(i["channel"].as<std::string>() + "/" + i["variant"].as<std::string>());
        // Indexes the framework block does not list (a channel's aggregate index, a variant only it
        // offers) are served too: variant discovery finds them (resolver/discovery.hpp).
        for (const auto& i : s["index"])
          if (auto k = i.first.as<std::string>(); std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        fs::create_directories(c.root / "matrices" / id);
        REQUIRE(util::write_file_atomic(c.root / "matrices" / id / "scenario.yaml", matrices_yaml(s["framework"])).has_value());
      } else {
        keys.push_back("default");
      }
      for (const auto& k : keys) jobs.push_back({{"out", (c.root / "www" / id).string()}, {"spec", index_spec(s, k)}});
      c.scenarios.emplace_back(id, s);
    }
    REQUIRE(util::write_file_atomic(c.root / "jobs.json", jobs.dump()).has_value());
    auto built = util::run_process({"python3", "-c",
                                    "import json, sys; sys.path.insert(0, sys.argv[1]); import index_builder\n"
                                    "for j in json.load(open(sys.argv[2])): index_builder.build(j['spec'], j['out'])",
                                    testing::support_dir().string(), (c.root / "jobs.json").string()},
                                   {.timeout = std::chrono::seconds(600)});
    REQUIRE(built.has_value());
    REQUIRE_MESSAGE(built->ok(), built->err);

    auto venv = util::run_process({"python3", "-m", "venv", "--without-pip", (c.root / "venv").string()});
    REQUIRE(venv.has_value());
    REQUIRE_MESSAGE(venv->ok(), venv->err);
    c.venv_python = c.root / "venv" / "bin" / "python";
    for (const auto& e : fs::directory_iterator(c.root / "venv" / "lib"))
      if (fs::is_directory(e.path() / "site-packages")) c.site_packages = e.path() / "site-packages";
    REQUIRE(!c.site_packages.empty());
    c.cache = c.root / "cache";

    auto nginx = testing::NginxServer::start({.root = c.root / "www"});
    REQUIRE_MESSAGE(nginx.has_value(), (nginx ? "" : nginx.error().render()));
    c.nginx = std::move(*nginx);

    MESSAGE("not expressible through the CLI (see tests/scenarios/README.md): host.driver_cuda and "
            "host.driver_compat (the binary derives both from --driver and the matrices' toolkit table), "
            "per-file size (real wheels)");
    for (const auto& [id, s] : c.scenarios) {
      CAPTURE(id);
      write_installed(c, s);
      check(c, id, s);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE(fmt::format("{} scenarios through the binary in {:.1f}s", c.scenarios.size(), secs));
    if (!std::getenv("ENVFIX_KEEP_TEST_SERVERS")) fs::remove_all(c.root);
  }
}

} // namespace resolver_scenarios_cli_test
