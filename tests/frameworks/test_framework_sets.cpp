// MUST SHOW (issue 18, planning side): JAX (cuda12/cuda13), TensorFlow and PaddlePaddle planned by the
// real `envfix plan --framework …` with the embedded matrices, on sm_61, sm_90 and sm_120 with drivers
// 535, 570 and 580, from local indexes shaped like the real ones: a PyPI-like index (jax, jaxlib,
// jax-cuda12/13-plugin and -pjrt with their extras and `with-cuda` nvidia-* requirements, tensorflow
// with `and-cuda`) and a paddlepaddle.org.cn-like one (per-variant directories whose pages link to a
// CDN host). Each planned set must equal what `pip download` of the right extra resolves from the
// same index; the variant expected per host is derived here from the matrices' facts (cuda.yaml's
// drivers, the rows' arch lists), not read from envfix. The wheels that carry kernels hold a real ELF
// shared object with a fatbin, built by the local nvcc (tests/wheel/nvcc_fixtures.hpp).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include "specs/wheel_filename.hpp"
#include "tests/support/envfix_bin.hpp"
#include "tests/support/nginx_server.hpp"
#include "tests/wheel/nvcc_fixtures.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace envfix;

namespace {

const char* const k_platform = "manylinux_2_28_x86_64";

json pkg(const std::string& name, const std::string& version, const std::string& tag, std::vector<std::string> requires_dist = {},
         std::vector<std::string> extras = {}, const fs::path& kernels = {}, const std::string& kernel_path = {}) {
  json p{{"name", name}, {"version", version}, {"tags", {tag}}, {"requires_dist", requires_dist}, {"provides_extra", extras}};
  if (!kernels.empty()) p["files"] = {{kernel_path, "@@file:" + kernels.string()}};
  return p;
}

// The PyPI-like tree: what `pip install jax[cuda12|cuda13]` and `tensorflow[and-cuda]` meet on pypi.org,
// with the requirement shapes of jax 0.7.x and tensorflow 2.20.0's METADATA (fewer nvidia-* wheels).
json pypi_spec(const fs::path& so) {
  const std::string m27 = "cp311-cp311-manylinux_2_27_x86_64", any = "py3-none-any", pyso = "py3-none-manylinux_2_27_x86_64";
  json ps = json::array();
  for (std::string v : {"0.7.1", "0.7.2"}) {
    std::vector<std::string> req = {fmt::format("jaxlib<={},>={}", v, v), "ml_dtypes>=0.5.0", "numpy>=1.26", "opt_einsum"};
    for (std::string c : {"12", "13"}) {
      req.push_back(fmt::format("jaxlib=={} ; extra == \"cuda{}\"", v, c));
      req.push_back(fmt::format("jax-cuda{}-plugin[with-cuda]<={},>={} ; extra == \"cuda{}\"", c, v, v, c));
      req.push_back(fmt::format("jaxlib=={} ; extra == \"cuda{}-local\"", v, c));
      req.push_back(fmt::format("jax-cuda{}-plugin=={} ; extra == \"cuda{}-local\"", c, v, c));
    }
    ps.push_back(pkg("jax", v, any, req, {"cuda12", "cuda12-local", "cuda13", "cuda13-local"}));
    ps.push_back(pkg("jaxlib", v, m27, {"ml_dtypes>=0.5.0", "numpy>=1.26", "scipy>=1.12"}));
    ps.push_back(pkg(
        "jax-cuda13-plugin", v, m27,
        {fmt::format("jax-cuda13-pjrt=={}", v), "nvidia-cublas<14,>=13.0.0.19 ; extra == \"with-cuda\"",
         "nvidia-cuda-runtime<14,>=13.0.48 ; extra == \"with-cuda\"", "nvidia-cuda-nvcc<14,>=13.0.48 ; extra == \"with-cuda\"",
         "nvidia-cudnn-cu13<10.0,>=9.8 ; extra == \"with-cuda\"", "nvidia-nccl-cu13>=2.18.1 ; extra == \"with-cuda\""},
        {"with-cuda"}, so, "jax_cuda13_plugin/_triton.so"));
    ps.push_back(pkg("jax-cuda13-pjrt", v, pyso, {}, {}, so, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"));
    ps.push_back(
        pkg("jax-cuda12-plugin", v, m27,
            {fmt::format("jax-cuda12-pjrt=={}", v), "nvidia-cublas-cu12>=12.1.3.1 ; extra == \"with-cuda\"",
             "nvidia-cuda-runtime-cu12>=12.1.105 ; extra == \"with-cuda\"",
             "nvidia-cudnn-cu12<10.0,>=9.8 ; extra == \"with-cuda\"", "nvidia-nccl-cu12>=2.18.1 ; extra == \"with-cuda\""},
            {"with-cuda"}, so, "jax_cuda12_plugin/_triton.so"));
    ps.push_back(pkg("jax-cuda12-pjrt", v, pyso, {}, {}, so, "jax_plugins/xla_cuda12/xla_cuda_plugin.so"));
  }
  for (std::string v : {"2.19.0", "2.20.0"})
    ps.push_back(
        pkg("tensorflow", v, "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",
            {"absl-py>=1.0.0", "ml_dtypes<1.0.0,>=0.5.1", "numpy>=1.26.0",
             "nvidia-cublas-cu12<13.0,>=12.5.3.2 ; extra == \"and-cuda\"",
             "nvidia-cuda-runtime-cu12<13.0,>=12.5.82 ; extra == \"and-cuda\"",
             "nvidia-cudnn-cu12<10.0,>=9.3.0.75 ; extra == \"and-cuda\"", "nvidia-nccl-cu12<3.0,>=2.25.1 ; extra == \"and-cuda\"",
             "nvidia-nvjitlink-cu12<13.0,>=12.5.82 ; extra == \"and-cuda\""},
            {"and-cuda"}, so, "tensorflow/python/_pywrap_tensorflow_internal.so"));
  // Dependencies, some in several versions so that the extras' bounds decide.
  for (auto [n, v] : std::vector<std::pair<std::string, std::string>>{{"nvidia-cublas", "13.0.0.19"},
                                                                      {"nvidia-cublas", "13.1.0.3"},
                                                                      {"nvidia-cuda-runtime", "13.0.48"},
                                                                      {"nvidia-cuda-nvcc", "13.0.48"},
                                                                      {"nvidia-nccl-cu13", "2.27.7"},
                                                                      {"nvidia-cublas-cu12", "12.5.3.2"},
                                                                      {"nvidia-cublas-cu12", "12.9.1.4"},
                                                                      {"nvidia-cuda-runtime-cu12", "12.5.82"},
                                                                      {"nvidia-cuda-runtime-cu12", "12.9.79"},
                                                                      {"nvidia-nccl-cu12", "2.27.3"},
                                                                      {"nvidia-nvjitlink-cu12", "12.9.86"},
                                                                      {"nvidia-nvjitlink-cu12", "13.0.39"}})
    ps.push_back(pkg(n, v, pyso));
  ps.push_back(pkg("nvidia-cudnn-cu13", "9.12.0.46", pyso, {"nvidia-cublas"}));
  ps.push_back(pkg("nvidia-cudnn-cu12", "9.12.0.46", pyso, {"nvidia-cublas-cu12"}));
  ps.push_back(pkg("numpy", "2.3.1", "cp311-cp311-manylinux_2_28_x86_64"));
  ps.push_back(pkg("scipy", "1.16.1", "cp311-cp311-manylinux_2_28_x86_64", {"numpy<2.6,>=1.25.2"}));
  ps.push_back(pkg("ml-dtypes", "0.5.3", "cp311-cp311-manylinux_2_27_x86_64", {"numpy>=1.21"}));
  ps.push_back(pkg("opt-einsum", "3.4.0", any));
  ps.push_back(pkg("opt-einsum", "3.3.0", any, {"numpy>=1.7"}));
  ps.push_back(pkg("absl-py", "2.3.1", any));
  return {{"packages", ps}, {"html", true}, {"json", false}, {"simple_dir", "pypi/simple"}, {"files_dir", "pypi/files"}};
}

// One variant directory of the paddlepaddle.org.cn-like index: its pages link to the CDN host
// (https://localhost:PORT/cdn/…), as www.paddlepaddle.org.cn/packages/stable/cu126/ links to bcebos.
json paddle_spec(const std::string& variant, const std::vector<std::string>& versions, const std::string& cdn,
                 const fs::path& so) {
  static const std::map<std::string, std::vector<std::string>> runtime = {
      {"cu118", {"nvidia-cuda-runtime-cu11==11.8.89 ; platform_system == \"Linux\""}},
      {"cu126",
       {"nvidia-cuda-runtime-cu12==12.6.77 ; platform_system == \"Linux\"",
        "nvidia-cublas-cu12==12.6.4.1 ; platform_system == \"Linux\""}},
      {"cu129",
       {"nvidia-cuda-runtime-cu12==12.9.79 ; platform_system == \"Linux\"",
        "nvidia-cublas-cu12==12.9.1.4 ; platform_system == \"Linux\""}},
      {"cu130", {"nvidia-cuda-runtime==13.0.48 ; platform_system == \"Linux\""}},
      {"cpu", {}}};
  const std::string tag = "cp311-cp311-manylinux1_x86_64", pyso = "py3-none-manylinux_2_27_x86_64";
  json ps = json::array();
  for (const auto& v : versions) {
    std::vector<std::string> req = {"numpy>=1.21", "opt_einsum==3.3.0", "protobuf>=3.20.2"};
    for (const auto& r : runtime.at(variant)) req.push_back(r);
    if (variant == "cpu")
      ps.push_back(pkg("paddlepaddle", v, tag, req));
    else
      ps.push_back(pkg("paddlepaddle-gpu", v, tag, req, {}, so, "paddle/base/libpaddle.so"));
  }
  for (auto [n, v] : std::vector<std::pair<std::string, std::string>>{{"nvidia-cuda-runtime-cu11", "11.8.89"},
                                                                      {"nvidia-cuda-runtime-cu12", "12.6.77"},
                                                                      {"nvidia-cuda-runtime-cu12", "12.9.79"},
                                                                      {"nvidia-cublas-cu12", "12.6.4.1"},
                                                                      {"nvidia-cublas-cu12", "12.9.1.4"},
                                                                      {"nvidia-cuda-runtime", "13.0.48"}})
    ps.push_back(pkg(n, v, pyso));
  ps.push_back(pkg("numpy", "2.3.1", "cp311-cp311-manylinux_2_28_x86_64"));
  ps.push_back(pkg("numpy", "1.26.4", "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"));
  ps.push_back(pkg("opt-einsum", "3.3.0", "py3-none-any", {"numpy>=1.7"}));
  ps.push_back(pkg("protobuf", "6.31.1", "cp39-abi3-manylinux2014_x86_64"));
  return {{"packages", ps},
          {"html", true},
          {"json", false},
          {"simple_dir", "paddle/packages/stable/" + variant},
          {"files_dir", "cdn/stable/" + variant},
          {"href_style", "absolute"},
          {"base_url", cdn}};
}

std::set<std::string> pip_download(const fs::path& root, const std::string& url, const std::string& request, const fs::path& ca) {
  static int n = 0;
  fs::path dest = root / fmt::format("pip{}", n++);
  std::vector<std::string> argv = {"python3",
                                   "-m",
                                   "pip",
                                   "download",
                                   "--quiet",
                                   "--no-cache-dir",
                                   "-d",
                                   dest.string(),
                                   "--only-binary",
                                   ":all:",
                                   "--python-version",
                                   "3.11",
                                   "--implementation",
                                   "cp",
                                   "--abi",
                                   "cp311",
                                   "--index-url",
                                   url,
                                   request};
  // pip 23.2.1 takes --platform literally (no older manylinux levels): name every level the target
  // (manylinux_2_28, which envfix expands itself) accepts that the index uses.
  for (const char* plat :
       {k_platform, "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"})
    argv.insert(argv.end() - 1, {"--platform", plat});
  util::SubprocessOptions po;
  po.timeout = std::chrono::seconds(120);
  // This machine's pip configuration names another CA bundle and /opt/wheels: the test's own CA and index only.
  po.unset_env = {"PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"};
  po.set_env = {{"PIP_DISABLE_PIP_VERSION_CHECK", "1"},
                {"PIP_NO_INPUT", "1"},
                {"PIP_CONFIG_FILE", "/dev/null"},
                {"PIP_CERT", ca.string()},
                {"PIP_RETRIES", "0"}};
  auto r = util::run_process(argv, po);
  REQUIRE(r.has_value());
  INFO("pip download ", request, " from ", url, ":\n", r->out, r->err);
  REQUIRE(r->ok());
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dest)) {
    auto wf = specs::WheelFilename::parse(e.path().filename().string());
    REQUIRE(wf.has_value());
    out.insert(wf->normalized_name() + "==" + wf->version.to_string());
  }
  return out;
}

struct Case {
  std::string framework, gpu, driver;
  std::string variant;   // expected; "" = no set (the plan must fail)
  std::string pip_index; // "pypi" or the paddle variant directory
  std::string pip_request;
  std::string fail_text; // for a failure: text the error must hold
};

// The expected variant, from the embedded matrices' facts: CUDA 13.0 needs 580.65.06, 12.9 575.51.03
// (570 and 535 run it only through minor-version compatibility), 12.6 560.28.03, 12.5 555.42.02, 11.8
// 520.61.05. jax cuda13 has no SASS below sm_75 and cuda12 has sm_60; TensorFlow has SASS up to sm_90 and
// compute_90 PTX (sm_120 by JIT, which minor-version compatibility cannot do); PaddlePaddle's rows have
// no arch data (unverified, checked after download), so its choice is the driver's alone.
std::vector<Case> cases() {
  std::vector<Case> out;
  const std::map<std::string, std::string> drivers = {{"535", "535.183.01"}, {"570", "570.86.10"}, {"580", "580.65.06"}};
  for (std::string gpu : {"sm_61", "sm_90", "sm_120"})
    for (const auto& [d, driver] : drivers) {
      bool cuda13 = d == "580" && gpu != "sm_61";
      out.push_back({"jax", gpu, driver, cuda13 ? "cuda13" : "cuda12", "pypi", cuda13 ? "jax[cuda13]" : "jax[cuda12]", ""});
      if (gpu == "sm_120" && d == "535")
        out.push_back({"tensorflow", gpu, driver, "", "", "", "ptx-needs-newer-driver"});
      else
        out.push_back({"tensorflow", gpu, driver, "cuda12", "pypi", "tensorflow[and-cuda]", ""});
      std::string pv = d == "580" ? "cu130" : d == "570" ? "cu126" : "cu118";
      out.push_back({"paddlepaddle", gpu, driver, pv, pv, "paddlepaddle-gpu", ""});
    }
  return out;
}

} // namespace

// A temporary folder served by nginx over HTTPS (skips the test, exit 77, when nginx cannot start);
// `cdn` is the same server under another host name (the paddle pages point their files there).
struct Site {
  fs::path root;
  std::unique_ptr<testing::NginxServer> server;
  std::string base, cdn;
};
Site start_site(const std::string& prefix) {
  auto tmp = util::make_temp_dir(fs::temp_directory_path(), prefix);
  REQUIRE(tmp.has_value());
  Site site;
  site.root = *tmp;
  fs::create_directories(site.root / "www");
  auto server = testing::NginxServer::start(testing::NginxOptions{.root = site.root / "www"});
  if (!server) {
    MESSAGE("SKIP: nginx could not start: " << server.error().render());
    std::exit(77);
  }
  site.server = std::move(*server);
  site.base = site.server->https_url();
  site.cdn = site.base;
  site.cdn.replace(site.cdn.find("127.0.0.1"), 9, "localhost");
  return site;
}

TEST_SUITE("integration/frameworks/framework_sets") {

  TEST_CASE("jax, tensorflow and paddlepaddle: the planned set is what pip download of the right extra resolves") {
    auto t0 = std::chrono::steady_clock::now();
    // One fatbin-carrying shared object for every kernel wheel (the local CUDA 13 nvcc cannot target
    // below sm_75; the plan judges the matrices' rows, apply and doctor read these binaries).
    const fs::path so =
        test::so("framework-kernels.so", {"-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_90,code=sm_90",
                                          "-gencode", "arch=compute_120,code=[sm_120,compute_120]"});
    Site site = start_site("envfix-fwsets-");
    const fs::path& root = site.root;
    auto& server = site.server;
    const std::string& base = site.base;
    const std::string& cdn = site.cdn;
    json jobs = json::array({pypi_spec(so)});
    const std::map<std::string, std::vector<std::string>> paddle = {
        {"cu118", {"3.0.0"}}, {"cu126", {"3.0.0", "3.3.1"}}, {"cu129", {"3.3.1"}}, {"cu130", {"3.3.1"}}, {"cpu", {"3.3.1"}}};
    for (const auto& [variant, versions] : paddle) jobs.push_back(paddle_spec(variant, versions, cdn, so));
    for (const auto& j : jobs) {
      auto built = testing::build_index(root / "www", j.dump());
      REQUIRE_MESSAGE(built.has_value(), built.error().render());
    }
    {
      // The kernel wheels hold a real fatbin: envfix's own reader finds SASS for sm_90 in the plugin.
      auto ins =
          util::run_process({testing::envfix_bin().string(), "inspect", "--format", "json", "--gpu", "sm_90",
                             (root / "www/pypi/files/jax_cuda13_plugin-0.7.2-cp311-cp311-manylinux_2_27_x86_64.whl").string()});
      REQUIRE(ins.has_value());
      INFO(ins->out, ins->err);
      REQUIRE(ins->ok());
      CHECK(json::parse(ins->out)["files"][0]["coverage"]["sm_90"]["verdict"] == "full");
    }
    auto venv = util::run_process({"python3", "-m", "venv", "--without-pip", (root / "venv").string()});
    REQUIRE(venv.has_value());
    REQUIRE_MESSAGE(venv->ok(), venv->err);

    std::map<std::string, std::set<std::string>> pip_sets; // url + request → set
    int same = 0, refused = 0;
    for (const auto& c : cases()) {
      CAPTURE(c.framework);
      CAPTURE(c.gpu);
      CAPTURE(c.driver);
      const std::string mirror = c.framework == "paddlepaddle" ? base + "/paddle/packages" : base + "/pypi/simple";
      std::vector<std::string> args{testing::envfix_bin().string(),
                                    "plan",
                                    "--format",
                                    "json",
                                    "--no-progress",
                                    "--framework",
                                    c.framework,
                                    "--mirror",
                                    mirror,
                                    "--gpu",
                                    c.gpu,
                                    "--driver",
                                    c.driver,
                                    "--python-version",
                                    "3.11.7",
                                    "--platform",
                                    k_platform,
                                    "--python",
                                    (root / "venv/bin/python").string(),
                                    "--cache-dir",
                                    (root / "cache").string()};
      util::SubprocessOptions o;
      o.timeout = std::chrono::seconds(300); // a hang's bound, generous for a loaded machine
      o.set_env = {{"NO_COLOR", "1"}, {"ENVFIX_NO_NVML", "1"}, {"SSL_CERT_FILE", server->ca_file().string()}};
      o.unset_env = {"ENVFIX_MATRICES",    "ENVFIX_GPU",     "ENVFIX_DRIVER", "ENVFIX_INDEX_URL",
                     "ENVFIX_MIRROR",      "ENVFIX_OFFLINE", "VIRTUAL_ENV",   "CONDA_PREFIX",
                     "REQUESTS_CA_BUNDLE", "https_proxy",    "http_proxy"};
      auto r = util::run_process(args, o);
      REQUIRE(r.has_value());
      INFO("envfix plan: exit ", r->exit_code, "\n", r->out, r->err);
      if (c.variant.empty()) {
        CHECK(r->exit_code != 0);
        CHECK((r->out + r->err).find(c.fail_text) != std::string::npos);
        ++refused;
        continue;
      }
      REQUIRE(r->exit_code == 0);
      const json plan = json::parse(r->out);
      CHECK(plan["variant"] == c.variant);
      std::set<std::string> ours;
      for (const auto& i : plan["install"]) ours.insert(i["name"].get<std::string>() + "==" + i["version"].get<std::string>());
      const std::string url =
          c.pip_index == "pypi" ? base + "/pypi/simple/" : fmt::format("{}/paddle/packages/stable/{}/", base, c.pip_index);
      auto& pip = pip_sets[url + " " + c.pip_request];
      if (pip.empty()) pip = pip_download(root, url, c.pip_request, server->ca_file());
      CHECK(ours == pip);
      if (ours == pip) ++same;
      const std::string why = plan["why"].get<std::string>();
      if (c.framework == "jax") CHECK(why.find(fmt::format("kernels in jax-{}-plugin 0.7.2", c.variant)) != std::string::npos);
      if (c.framework == "paddlepaddle") {
        CHECK(why.find("unverified (no arch data for this build), checked after download") != std::string::npos);
        CHECK(why.find("kernels cover") == std::string::npos);
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE(fmt::format("{} host cases: {} sets equal to pip download's, {} refused as expected, {} pip runs, {:.1f}s",
                        cases().size(), same, refused, pip_sets.size(), secs));
    CHECK(same + refused == static_cast<int>(cases().size()));
    std::error_code ec;
    fs::remove_all(root, ec);
  }
}

TEST_SUITE("integration/frameworks/framework_sets") {

  // Issue 36, item 1: without --framework the request names the framework ('jax[cuda13]' plans jax, not
  // torch); a request naming two is refused asking for --framework; one naming none plans just itself,
  // from pip's default index (offline here: the error names that index, and no torch is planned). Fails
  // when the default torch comes back for any of them.
  TEST_CASE("without --framework, the framework is the one the request names") {
    Site site = start_site("envfix-fwreq-");
    const fs::path& root = site.root;
    auto& server = site.server;
    const std::string& base = site.base;
    const std::string& cdn = site.cdn;
    for (const auto& j : {pypi_spec({}), paddle_spec("cu130", {"3.3.1"}, cdn, {})}) {
      auto built = testing::build_index(root / "www", j.dump());
      REQUIRE_MESSAGE(built.has_value(), built.error().render());
    }
    auto venv = util::run_process({"python3", "-m", "venv", "--without-pip", (root / "venv").string()});
    REQUIRE(venv.has_value());
    REQUIRE_MESSAGE(venv->ok(), venv->err);
    auto plan = [&](std::vector<std::string> request, const std::string& mirror, std::vector<std::string> more = {}) {
      std::vector<std::string> args{testing::envfix_bin().string(),
                                    "plan",
                                    "--format",
                                    "json",
                                    "--no-progress",
                                    "--mirror",
                                    mirror,
                                    "--gpu",
                                    "sm_90",
                                    "--driver",
                                    "580.65.06",
                                    "--python-version",
                                    "3.11.7",
                                    "--platform",
                                    k_platform,
                                    "--python",
                                    (root / "venv/bin/python").string(),
                                    "--cache-dir",
                                    (root / "cache").string()};
      args.insert(args.end(), request.begin(), request.end());
      args.insert(args.end(), more.begin(), more.end());
      util::SubprocessOptions o;
      o.timeout = std::chrono::seconds(300); // a hang's bound, generous for a loaded machine
      o.set_env = {{"NO_COLOR", "1"}, {"ENVFIX_NO_NVML", "1"}, {"SSL_CERT_FILE", server->ca_file().string()}};
      o.unset_env = {
          "ENVFIX_MATRICES",        "ENVFIX_GPU",  "ENVFIX_DRIVER", "ENVFIX_INDEX_URL",   "ENVFIX_MIRROR", "ENVFIX_OFFLINE",
          "ENVFIX_EXTRA_INDEX_URL", "VIRTUAL_ENV", "CONDA_PREFIX",  "REQUESTS_CA_BUNDLE", "https_proxy",   "http_proxy"};
      auto r = util::run_process(args, o);
      REQUIRE(r.has_value());
      return *r;
    };
    auto names = [](const json& p) {
      std::set<std::string> out;
      for (const auto& i : p["install"]) out.insert(i["name"].get<std::string>());
      return out;
    };
    const std::string pypi = base + "/pypi/simple", paddle = base + "/paddle/packages";
    struct Want {
      std::string request, mirror, variant, member;
    };
    for (const auto& c :
         {Want{"jax[cuda13]", pypi, "cuda13", "jax-cuda13-plugin"}, Want{"tensorflow[and-cuda]", pypi, "cuda12", "tensorflow"},
          Want{"paddlepaddle-gpu", paddle, "cu130", "paddlepaddle-gpu"}}) {
      CAPTURE(c.request);
      auto r = plan({c.request}, c.mirror);
      INFO("envfix plan: exit ", r.exit_code, "\n", r.out, r.err);
      REQUIRE(r.exit_code == 0);
      const json p = json::parse(r.out);
      CHECK(p["variant"] == c.variant);
      CHECK(names(p).contains(c.member));
      CHECK_FALSE(names(p).contains("torch"));
      CHECK(r.err.find("assuming torch") == std::string::npos);
    }
    // Two frameworks: a usage error naming both, with --framework as the way out.
    auto two = plan({"torch", "jax[cuda13]"}, pypi);
    INFO(two.out, two.err);
    CHECK(two.exit_code == 1);
    CHECK((two.out + two.err).find("the request names 2 frameworks (torch, jax)") != std::string::npos);
    CHECK((two.out + two.err).find("--framework torch") != std::string::npos);
    // No framework: numpy alone, from pip's default index (not reachable offline, so named in the error).
    auto plain = plan({"numpy"}, pypi, {"--offline"});
    INFO(plain.out, plain.err);
    CHECK(plain.exit_code != 0);
    CHECK((plain.out + plain.err).find("https://pypi.org/simple") != std::string::npos);
    CHECK((plain.out + plain.err).find("torch") == std::string::npos);
    std::error_code ec;
    fs::remove_all(root, ec);
  }
}
