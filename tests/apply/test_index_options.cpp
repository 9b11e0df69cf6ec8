// Index options end to end (README.md, "Index options"): --extra-index-url with the first-index
// strategy, --index-url that keeps the host's GPU/driver/kernel checks with a framework, --find-links
// beside both. Two indexes on one real nginx over HTTPS (a CA made by the test): a framework index
// (whl/cu130, labelled builds) and a PyPI-like one (pypi/simple) that also offers a higher version of
// the framework package (dependency confusion) and the dependencies.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/apply/apply_world.hpp"
#include "util/fs.hpp"

namespace apply_index_options_test {

using namespace envfix;
namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace envfix::apply_test;

namespace {

// "ixfw": one stable channel, per-variant indexes; 1.0.0 claimed sm_90 only, 2.0.0 without arch data.
// The cu130 variant's set names ixfw-plugin (matrices/knowledge.hpp, Variant::packages).
constexpr const char* kIxfwMatrices = R"YAML(schema: 1
frameworks:
  ixfw:
    main_package: ixfw
    default_mirror: "https://ixfw.invalid"
    channels:
      stable: "{mirror}/whl/{variant}"
    source: "envfix tests/apply/test_index_options.cpp"
    variants:
      cu130: {cuda: "13.0", packages: [ixfw-plugin]}
    smoke:
      step_a: "import ixfw; print('step A ok')"
      step_b: "import ixfw; print('step B ok')"
      cpu:
        step: "import ixfw; print('step A ok')"
    releases:
      - versions: ["1.0.0"]
        python: [cp311, cp312]
        source: "test fixture"
        variants:
          cu130:
            linux_x86_64: {sass: [sm_90], ptx: [], confidence: verified, source: "test claim"}
      - versions: ["2.0.0"]
        python: [cp311, cp312]
        source: "test fixture (no arch data)"
        variants:
          cu130:
            linux_x86_64: {confidence: unverified, source: "no arch data"}
)YAML";

// The framework index: ixfw builds (+cu130), `shared` 1.0 (also on the PyPI-like index, as 2.0),
// and torch 2.7.0+cu126 in a PyTorch-shaped tree (the matrices say it lacks sm_120).
std::string framework_index(const std::string& so) {
  return fmt::format(R"({{"simple_dir": "whl/cu130", "files_dir": "whl/files", "packages": [
    {{"name": "ixfw", "version": "1.0.0+cu130", "requires_dist": ["ixdep>=1", "shared"], "files": {{"ixfw/__init__.py": "V = 1\n"}}}},
    {{"name": "ixfw", "version": "2.0.0+cu130", "tags": ["py3-none-manylinux_2_17_x86_64"],
      "files": {{"ixfw/__init__.py": "V = 2\n", "ixfw/lib/libixfw_kernels.so": {}}}}},
    {{"name": "shared", "version": "1.0"}}
  ]}})",
                     byte_list(so));
}

constexpr const char* kPypiIndex = R"({"simple_dir": "pypi/simple", "files_dir": "pypi/files", "packages": [
  {"name": "ixfw", "version": "9.0.0+cu130", "files": {"ixfw/__init__.py": "raise SystemExit('the dependency-confusion build')\n"}},
  {"name": "ixfw-plugin", "version": "9.0.0"},
  {"name": "ixdep", "version": "1.0"},
  {"name": "shared", "version": "2.0"},
  {"name": "torch", "version": "9.0.0"}
]})";

// Paddle-shaped: a CDN directory per variant, files without local labels.
constexpr const char* kPaddleIndex = R"({"simple_dir": "paddle/packages/stable/cu130", "files_dir": "paddle/files", "packages": [
  {"name": "paddlepaddle-gpu", "version": "3.2.0", "tags": ["py3-none-manylinux_2_17_x86_64"]}
]})";

struct IndexWorld {
  World w;
  fs::path venv;
  std::string py;
  IndexWorld() : w(framework_index(arch_shared_object("90"))) {
    w.rebuild_index(kPypiIndex);
    w.rebuild_index(kTorchCu126Index);
    w.rebuild_index(kPaddleIndex);
    write(w.root() / "matrices/ixfw.yaml", kIxfwMatrices);
    venv = w.venv("venv");
    py = (venv / "bin/python").string();
  }
  std::string fw_index() const { return w.base_url() + "/whl/cu130"; }
  std::string pypi() const { return w.base_url() + "/pypi/simple"; }
  std::vector<std::string> ixfw(std::vector<std::string> args) const {
    args.insert(args.end(), {"--framework", "ixfw", "--matrices", (w.root() / "matrices").string(), "--python", py});
    return args;
  }
};

// name -> the URL its planned file comes from.
std::map<std::string, std::string> planned_urls(const std::string& out) {
  std::map<std::string, std::string> m;
  const auto doc = json::parse(out);
  for (const auto& i : doc["install"]) m[i["name"].get<std::string>()] = i["url"].get<std::string>();
  return m;
}

} // namespace

TEST_SUITE("integration/apply/index_options") {

  TEST_CASE(
      "--extra-index-url: the framework's packages only from its index (no dependency confusion), deps from the first index that has them") {
    IndexWorld x;
    auto& w = x.w;
    const auto before = manifest(x.venv);
    auto p = w.envfix(x.ixfw({"--format", "json", "plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--extra-index-url", x.pypi(),
                              "--gpu", "sm_90", "--driver", "580.65.06"}));
    REQUIRE(p.rc == 0);
    auto urls = planned_urls(p.out);
    REQUIRE_MESSAGE(urls.size() == 3, p.out);
    CHECK(urls["ixfw"].starts_with(w.base_url() + "/whl/files/ixfw-1.0.0%2Bcu130")); // not the extra index's 9.0.0
    CHECK(urls["ixdep"].starts_with(w.base_url() + "/pypi/files/"));                 // only the extra index has it
    CHECK(urls["shared"].starts_with(w.base_url() + "/whl/files/shared-1.0"));       // first index wins, never merged
    CHECK(json::parse(p.out)["extra_indexes"] == json::array({x.pypi()}));

    // Unpinned, the extra index's higher ixfw is still never taken.
    auto up = w.envfix(x.ixfw({"--format", "json", "plan", "ixfw", "--mirror", w.base_url(), "--extra-index-url", x.pypi(),
                               "--gpu", "sm_90", "--driver", "580.65.06"}));
    REQUIRE(up.rc == 0);
    CHECK(planned_urls(up.out)["ixfw"].find("/whl/files/") != std::string::npos);
    CHECK(up.out.find("9.0.0") == std::string::npos);

    // A variant's own package the framework index lacks is not found, never taken from the extra index.
    auto plug = w.envfix(x.ixfw({"plan", "ixfw==1.0.0", "ixfw-plugin", "--mirror", w.base_url(), "--extra-index-url", x.pypi(),
                                 "--gpu", "sm_90", "--driver", "580.65.06"}));
    CHECK(plug.rc == 1);
    CHECK(plug.err.find("never from an extra index") != std::string::npos);

    // Without the extra index, ixdep is missing: the extra index is what serves it.
    auto alone = w.envfix(x.ixfw({"plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06"}));
    CHECK(alone.rc == 1);
    CHECK(alone.err.find("ixdep") != std::string::npos);

    // Issue 36: pip's configured index (a PyPI mirror) serves what the framework's index lacks, searched
    // after it and said so; the framework's packages still come only from the framework's index.
    auto pipenv = w.envfix(
        x.ixfw({"--format", "json", "plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06"}),
        {{"PIP_INDEX_URL", x.pypi()}});
    REQUIRE(pipenv.rc == 0);
    auto pu = planned_urls(pipenv.out);
    CHECK(pu["ixfw"].find("/whl/files/") != std::string::npos);
    CHECK(pu["ixdep"].starts_with(w.base_url() + "/pypi/files/"));
    CHECK(json::parse(pipenv.out)["extra_indexes"] == json::array({x.pypi() + " (PIP_INDEX_URL)"}));

    // The environment variable, space-separated as PIP_EXTRA_INDEX_URL; text output names the extra indexes.
    auto env = w.envfix(x.ixfw({"plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--gpu", "sm_90", "--driver", "580.65.06"}),
                        {{"ENVFIX_EXTRA_INDEX_URL", w.base_url() + "/nothing-here/simple  " + x.pypi()}});
    CHECK(env.rc == 0);
    CHECK(env.err.find("extra indexes: " + w.base_url() + "/nothing-here/simple, " + x.pypi()) != std::string::npos);

    // apply installs that set; pip agrees on what is installed.
    auto a = w.envfix(x.ixfw({"apply", "ixfw==1.0.0", "--mirror", w.base_url(), "--extra-index-url", x.pypi(), "--gpu", "sm_90",
                              "--driver", "580.65.06", "--yes", "--no-verify", "--lockfile", w.lockfile().string()}));
    REQUIRE(a.rc == 0);
    auto listed = w.pip_list(x.venv);
    CHECK(listed.at("ixfw") == "1.0.0+cu130");
    CHECK(listed.at("ixdep") == "1.0");
    CHECK(listed.at("shared") == "1.0");
    auto lock = slurp(w.lockfile());
    CHECK(lock.find("/pypi/files/ixdep-1.0") != std::string::npos); // each package locked with its own URL
    CHECK(manifest(x.venv) != before);
  }

  TEST_CASE("--extra-index-url errors name the index; credentials are never printed; --find-links works beside it") {
    IndexWorld x;
    auto& w = x.w;
    const std::string dead = "https://envfix-no-such-host.invalid/simple";
    auto dns = w.envfix(x.ixfw(
        {"plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--extra-index-url", dead, "--gpu", "sm_90", "--driver", "580.65.06"}));
    CHECK(dns.rc != 0);
    CHECK(dns.err.find("extra index " + dead) != std::string::npos);
    CHECK(dns.err.find("DNS lookup failed") != std::string::npos);

    const std::string secret = "https://user:s3cret-token@envfix-no-such-host.invalid/simple";
    auto cred = w.envfix(x.ixfw({"--format", "json", "plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--extra-index-url", secret,
                                 "--gpu", "sm_90", "--driver", "580.65.06"}));
    CHECK(cred.rc != 0);
    CHECK(cred.err.find("s3cret-token") == std::string::npos);
    CHECK(cred.out.find("s3cret-token") == std::string::npos);
    auto doc = w.envfix({"--format", "json", "doctor", "--no-repro", "--python", x.py, "--gpu", "sm_90", "--driver", "580.65.06",
                         "--extra-index-url", secret});
    CHECK(doc.out.find("s3cret-token") == std::string::npos);
    // The fix carries it, redacted (and shell-quoted: `*`).
    CHECK(doc.out.find("--extra-index-url 'https://***@envfix-no-such-host.invalid/simple'") != std::string::npos);

    // A find-links folder joins the first index: its ixdep 2.0 is found before the extra index's 1.0.
    auto links = w.root() / "links";
    fs::create_directories(links);
    REQUIRE(testing::build_index(w.root() / "links-src", R"({"packages": [{"name": "ixdep", "version": "2.0"}]})"));
    fs::copy_file(w.root() / "links-src/files/ixdep-2.0-py3-none-any.whl", links / "ixdep-2.0-py3-none-any.whl");
    auto fl = w.envfix(x.ixfw({"--format", "json", "plan", "ixfw==1.0.0", "--mirror", w.base_url(), "--extra-index-url", x.pypi(),
                               "--find-links", links.string(), "--gpu", "sm_90", "--driver", "580.65.06"}));
    REQUIRE(fl.rc == 0);
    CHECK(planned_urls(fl.out)["ixdep"].starts_with("file://"));
    // Plain mode: --index-url, an extra index and find-links together, pip-like (no framework package).
    auto plain = w.envfix({"--format", "json", "plan", "ixdep", "shared", "--index-url", x.fw_index(), "--extra-index-url",
                           x.pypi(), "--python", x.py});
    REQUIRE(plain.rc == 0);
    auto pu = planned_urls(plain.out);
    CHECK(pu["shared"].find("/whl/files/shared-1.0") != std::string::npos);
    CHECK(pu["ixdep"].find("/pypi/files/ixdep-1.0") != std::string::npos);
  }

  TEST_CASE("--index-url with a framework keeps --gpu and --driver: kernels are checked, not silently planned") {
    IndexWorld x;
    auto& w = x.w;
    const auto before = manifest(x.venv);
    // torch named in the request on a GPU host: the framework path, the variant read from +cu126.
    const std::string pt = w.base_url() + "/pt/whl/cu126";
    auto t = w.envfix({"plan", "torch", "--index-url", pt, "--gpu", "sm_120", "--driver", "580.65.06", "--python", x.py});
    CHECK(t.rc == 1);
    CHECK(t.err.find("sm_120 not covered") != std::string::npos);
    auto t90 = w.envfix(
        {"--format", "json", "plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "580.65.06", "--python", x.py});
    REQUIRE(t90.rc == 0);
    auto tj = json::parse(t90.out);
    CHECK(tj["variant"] == "cu126");
    CHECK(tj["index"] == pt);
    // The driver counts too: CUDA 12.6 needs more than driver 470.
    auto old = w.envfix({"plan", "torch", "--index-url", pt, "--gpu", "sm_90", "--driver", "470.42.01", "--python", x.py});
    CHECK(old.rc == 1);
    CHECK(old.err.find("driver") != std::string::npos);
    // No GPU on the target: plain, pip-like.
    auto cpu = w.envfix({"--format", "json", "plan", "torch", "--index-url", pt, "--gpu", "none", "--python", x.py});
    REQUIRE(cpu.rc == 0);
    CHECK(json::parse(cpu.out)["channel"].get<std::string>().empty());

    // --framework and --index-url: 1.0.0's matrices row (sm_90 only) is refused on sm_120 ...
    auto r1 = w.envfix(x.ixfw({"plan", "ixfw==1.0.0", "--index-url", x.fw_index(), "--extra-index-url", x.pypi(), "--gpu",
                               "sm_120", "--driver", "580.65.06"}));
    CHECK(r1.rc == 1);
    CHECK(r1.err.find("sm_120 not covered") != std::string::npos);
    // ... 2.0.0 has no arch data: planned as unverified, and apply's kernel check refuses its sm_90-only .so.
    auto p2 = w.envfix(x.ixfw({"plan", "ixfw==2.0.0", "--index-url", x.fw_index(), "--gpu", "sm_120", "--driver", "580.65.06"}));
    CHECK(p2.rc == 0);
    CHECK(p2.err.find("arch-unverified") != std::string::npos);
    auto a2 = w.envfix(x.ixfw({"apply", "ixfw==2.0.0", "--index-url", x.fw_index(), "--gpu", "sm_120", "--driver", "580.65.06",
                               "--yes", "--lockfile", w.lockfile().string()}));
    CHECK(a2.rc == 1);
    CHECK(a2.err.find("kernel check refused ixfw 2.0.0+cu130") != std::string::npos);
    CHECK(manifest(x.venv) == before);
    CHECK(!fs::exists(w.lockfile()));

    // Paddle-shaped: no local labels; the variant is the URL's cu130 segment (so the driver is checked).
    const std::string pd = w.base_url() + "/paddle/packages/stable/cu130/";
    auto pj = w.envfix({"--format", "json", "plan", "--framework", "paddlepaddle", "paddlepaddle-gpu", "--index-url", pd, "--gpu",
                        "sm_90", "--driver", "580.65.06", "--python", x.py});
    REQUIRE(pj.rc == 0);
    CHECK(json::parse(pj.out)["variant"] == "cu130");
    auto pold = w.envfix({"plan", "--framework", "paddlepaddle", "paddlepaddle-gpu", "--index-url", pd, "--gpu", "sm_90",
                          "--driver", "535.104.05", "--python", x.py});
    CHECK(pold.rc == 1);
    CHECK(pold.err.find("CUDA 13.0 (variant cu130) needs a newer driver than 535.104.05") != std::string::npos);
  }

} // TEST_SUITE("integration/apply/index_options")

} // namespace apply_index_options_test
