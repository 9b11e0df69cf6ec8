#include <doctest/doctest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include "probe/base_env.hpp"
#include "probe/driver_parsers.hpp"
#include "probe/host_facts.hpp"
#include "test_support.hpp"
#include "util/fs.hpp"

using namespace envfix;
using namespace envfix::probe;
using envfix::test::fixture;
using envfix::test::ScopedEnv;
using envfix::test::TempDir;

namespace {
std::vector<GpuInfo> four_gpus() {
  std::vector<GpuInfo> v;
  const char* uuids[] = {"GPU-aaaa1111-0000-0000-0000-000000000000", "GPU-bbbb2222-0000-0000-0000-000000000000",
                         "GPU-bbbc3333-0000-0000-0000-000000000000", "GPU-dddd4444-0000-0000-0000-000000000000"};
  for (int i = 0; i < 4; ++i) {
    GpuInfo g;
    g.name = "GPU" + std::to_string(i);
    g.uuid = uuids[i];
    g.cc = {9, 0};
    v.push_back(g);
  }
  return v;
}
std::vector<int> physical(const std::vector<GpuInfo>& v) {
  std::vector<int> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    CHECK(v[i].index == static_cast<int>(i)); // renumbered from 0, as CUDA does
    out.push_back(v[i].physical_index);
  }
  return out;
}
bool nvml_present() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}
} // namespace

TEST_SUITE("unit/probe/driver_parsers") {

  TEST_CASE("driver version from the captured /proc and /sys files (H200)") {
    CHECK(parse_proc_driver_version(fixture("proc-driver-nvidia-version.txt")).value() == "580.159.04");
    CHECK(parse_sys_module_version(fixture("sys-module-nvidia-version.txt")).value() == "580.159.04");
    // Proprietary module wording and an older version.
    CHECK(parse_proc_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 "
                                    "22:20:39 UTC 2023\nGCC version:  gcc version 12.2.0\n")
              .value() == "535.54.03");
    CHECK(!parse_proc_driver_version("GCC version: 12\n"));
    CHECK(!parse_proc_driver_version("NVRM version: NVIDIA UNIX Kernel Module for x86_64\n"));
    CHECK(!parse_sys_module_version(""));
    CHECK(!parse_sys_module_version("580.159.04 extra"));
    CHECK(!parse_sys_module_version("abc"));
  }

  TEST_CASE("nvidia-smi CSV query (H200)") {
    auto rows = parse_nvidia_smi_csv(fixture("nvidia-smi-query.csv")).value();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].index == 0);
    CHECK(rows[0].name == "NVIDIA H200");
    CHECK(rows[0].uuid == "GPU-db0235f6-6834-a532-eb77-bf0f525e46f5");
    REQUIRE(rows[0].cc);
    CHECK(*rows[0].cc == specs::ComputeCapability{9, 0});
    CHECK(rows[0].driver_version == "580.159.04");
    CHECK(rows[0].memory_bytes == 143771ULL * 1024 * 1024);
    // Two GPUs, an old driver without compute_cap, columns reordered.
    auto two = parse_nvidia_smi_csv("name, index, compute_cap\nTesla T4, 0, [N/A]\nNVIDIA RTX 5090, 1, 12.0\n").value();
    REQUIRE(two.size() == 2);
    CHECK(!two[0].cc);
    CHECK(two[1].index == 1);
    CHECK(two[1].cc->major == 12);
    CHECK(!parse_nvidia_smi_csv(""));
    CHECK(!parse_nvidia_smi_csv("foo, bar\n1, 2\n"));
    auto bad = parse_nvidia_smi_csv("index, name\n0\n");
    REQUIRE(!bad);
    CHECK(bad.error().message.find("line 2") != std::string::npos);
    CHECK(!parse_nvidia_smi_csv("index, name\nx, H200\n"));
  }

  TEST_CASE("nvidia-smi -q report (H200)") {
    auto rep = parse_nvidia_smi_q(fixture("nvidia-smi-q.txt")).value();
    CHECK(rep.driver_version == "580.159.04");
    REQUIRE(rep.cuda);
    CHECK(*rep.cuda == specs::CudaVersion{13, 0});
    REQUIRE(rep.gpus.size() == 1);
    CHECK(rep.gpus[0].bus_id == "00000000:00:06.0");
    CHECK(rep.gpus[0].name == "NVIDIA H200");
    CHECK(rep.gpus[0].architecture == "Hopper");
    CHECK(rep.gpus[0].uuid == "GPU-db0235f6-6834-a532-eb77-bf0f525e46f5");
    CHECK(rep.gpus[0].minor_number == 0);
    // FB memory total, not BAR1 (262144 MiB) or Conf Compute (0 MiB).
    CHECK(rep.gpus[0].memory_bytes == 143771ULL * 1024 * 1024);
    CHECK(!parse_nvidia_smi_q("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"));
  }

  TEST_CASE("cuDriverGetVersion integers") {
    CHECK(cuda_version_from_int(13000) == specs::CudaVersion{13, 0});
    CHECK(cuda_version_from_int(12080) == specs::CudaVersion{12, 8});
    CHECK(cuda_version_from_int(12040) == specs::CudaVersion{12, 4});
    CHECK(cuda_version_from_int(11020) == specs::CudaVersion{11, 2});
  }

  TEST_CASE("CUDA_VISIBLE_DEVICES as the CUDA runtime applies it") {
    auto all = four_gpus();
    CHECK(physical(apply_cuda_visible_devices(all, std::nullopt)) == std::vector<int>{0, 1, 2, 3});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("2,0"))) == std::vector<int>{2, 0});
    CHECK(physical(apply_cuda_visible_devices(all, std::string(""))).empty());
    CHECK(physical(apply_cuda_visible_devices(all, std::string("-1"))).empty());
    // Parsing stops at the first invalid or absent device.
    CHECK(physical(apply_cuda_visible_devices(all, std::string("1,7,2"))) == std::vector<int>{1});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("3, 1"))) == std::vector<int>{3, 1});
    // UUIDs: full, unique prefix, without "GPU-"; an ambiguous prefix stops the list.
    CHECK(physical(apply_cuda_visible_devices(all, std::string("GPU-dddd4444-0000-0000-0000-000000000000,0"))) ==
          std::vector<int>{3, 0});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("GPU-aaaa"))) == std::vector<int>{0});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("bbbc"))) == std::vector<int>{2});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("GPU-bbb,1"))).empty());
    CHECK(physical(apply_cuda_visible_devices(all, std::string("MIG-1234"))).empty());
    // A repeated device makes the whole list invalid.
    CHECK(physical(apply_cuda_visible_devices(all, std::string("0,1,0"))).empty());
    CHECK(apply_cuda_visible_devices(all, std::string("1"))[0].name == "GPU1");
  }

  TEST_CASE("nvidia-smi -L: GPUs and the MIG devices of a GPU in MIG mode") {
    auto gpus = parse_nvidia_smi_list(util::read_file(test::fixtures_dir() / "mig/nvidia-smi-L.txt").value()).value();
    REQUIRE(gpus.size() == 2);
    CHECK(gpus[0].name == "NVIDIA A100-SXM4-40GB");
    CHECK(gpus[0].uuid == "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77");
    REQUIRE(gpus[0].mig.size() == 3);
    CHECK(gpus[0].mig[1].profile == "2g.10gb");
    CHECK(gpus[0].mig[1].uuid == "MIG-cba663e8-9bed-5b25-b243-5985ef7c9beb");
    CHECK(gpus[1].index == 1);
    CHECK(gpus[1].mig.empty());
    CHECK_FALSE(parse_nvidia_smi_list("No devices were found\n"));
    auto real = parse_nvidia_smi_list(fixture("nvidia-smi-L.txt")).value(); // the H200 machine, MIG off
    REQUIRE(real.size() == 1);
    CHECK(real[0].name == "NVIDIA H200");
    CHECK(real[0].uuid.starts_with("GPU-"));
    CHECK(real[0].mig.empty());
  }

  TEST_CASE("CUDA_VISIBLE_DEVICES with MIG devices: MIG-<uuid>, a unique prefix, the CUDA 11.0 form") {
    auto all = four_gpus();
    all[1].mig = {{"MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", "3g.20gb", 20ull << 30},
                  {"MIG-cba663e8-9bed-5b25-b243-5985ef7c9beb", "2g.10gb", 10ull << 30}};
    all[1].cc = {8, 0};
    auto v = apply_cuda_visible_devices(all, std::string("MIG-cba663e8-9bed-5b25-b243-5985ef7c9beb,3"));
    REQUIRE(v.size() == 2);
    CHECK(v[0].name == "GPU1 MIG 2g.10gb");
    CHECK(v[0].uuid == "MIG-cba663e8-9bed-5b25-b243-5985ef7c9beb");
    CHECK(v[0].mig_of == "GPU-bbbb2222-0000-0000-0000-000000000000");
    CHECK(v[0].cc == specs::ComputeCapability{8, 0}); // the parent's: what the kernels must cover
    CHECK(v[0].memory_bytes == 10ull << 30);
    CHECK(v[0].physical_index == 1);
    CHECK(v[1].physical_index == 3);
    CHECK(physical(apply_cuda_visible_devices(all, std::string("MIG-c6d4"))) == std::vector<int>{1});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("MIG-c"))).empty()); // both start with c
    // Ambiguous prefix, unknown MIG device, a repeated one: as for GPUs.
    all[1].mig.push_back({"MIG-c6d4aaaa-0000-0000-0000-000000000000", "1g.5gb", 0});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("MIG-c6d4,0"))).empty());
    CHECK(physical(apply_cuda_visible_devices(all, std::string("0,MIG-ffff"))) == std::vector<int>{0});
    CHECK(physical(apply_cuda_visible_devices(all, std::string("MIG-cba6,MIG-cba663e8"))).empty());
    // CUDA 11.0's MIG-GPU-<uuid>/<gi>/<ci>: only a GPU in MIG mode has one.
    auto old = apply_cuda_visible_devices(all, std::string("MIG-GPU-bbbb2222-0000-0000-0000-000000000000/1/0"));
    REQUIRE(old.size() == 1);
    CHECK(old[0].mig_of == "GPU-bbbb2222-0000-0000-0000-000000000000");
    CHECK(apply_cuda_visible_devices(all, std::string("MIG-GPU-aaaa1111-0000-0000-0000-000000000000/1/0")).empty());
  }

} // TEST_SUITE unit

TEST_SUITE("integration/probe/driver_parsers") {

  TEST_CASE("probe_driver reads a fake /sys + /proc tree (ENVFIX_SYSFS_ROOT), in source order") {
    TempDir root;
    ScopedEnv no_nvml("ENVFIX_NO_NVML", "1");
    ScopedEnv sysfs("ENVFIX_SYSFS_ROOT", root.path().string());
    ScopedEnv path("PATH", (root.path() / "bin").string()); // no nvidia-smi
    // Nothing at all: a clear not_found with a hint.
    auto none = probe_driver();
    REQUIRE(!none);
    CHECK(none.error().code == ErrorCode::not_found);
    CHECK(!none.error().hint.empty());
    // /proc only.
    test::write(root.path() / "proc/driver/nvidia/version", fixture("proc-driver-nvidia-version.txt"));
    auto proc = probe_driver().value();
    CHECK(proc.version == "580.159.04");
    CHECK(proc.source == "procfs");
    CHECK(!proc.cuda);
    // /sys wins over /proc.
    test::write(root.path() / "sys/module/nvidia/version", "570.86.10\n");
    auto sys = probe_driver().value();
    CHECK(sys.version == "570.86.10");
    CHECK(sys.source == "sysfs");
    // With ENVFIX_NO_NVML, GPUs are not probed at all.
    std::vector<util::Message> notes;
    CHECK(probe_gpus(&notes).value().empty());
    CHECK(!notes.empty());
  }

  TEST_CASE("nvidia-smi fallback: a fake nvidia-smi on PATH prints the captured H200 output") {
    if (nvml_present()) {
      MESSAGE("libnvidia-ml.so.1 is loadable here: the nvidia-smi fallback is not reached; skipped");
      return;
    }
    TempDir root;
    ScopedEnv no_nvml("ENVFIX_NO_NVML", std::nullopt);
    ScopedEnv sysfs("ENVFIX_SYSFS_ROOT", root.path().string());
    ScopedEnv cvd("CUDA_VISIBLE_DEVICES", std::nullopt);
    auto smi = root.path() / "bin/nvidia-smi";
    test::write(smi,
                "#!/bin/sh\ncase \"$1\" in\n  -q) cat '" + (test::h200() / "nvidia-smi-q.txt").string() +
                    "';;\n  --query-gpu=*) cat '" + (test::h200() / "nvidia-smi-query.csv").string() +
                    "';;\n  *) exit 9;;\nesac\n",
                0755);
    ScopedEnv path("PATH", (root.path() / "bin").string() + ":/usr/bin:/bin");
    std::vector<util::Message> notes;
    auto gpus = probe_gpus(&notes).value();
    REQUIRE(gpus.size() == 1);
    CHECK(gpus[0].name == "NVIDIA H200");
    CHECK(gpus[0].cc == specs::ComputeCapability{9, 0});
    CHECK(gpus[0].uuid == "GPU-db0235f6-6834-a532-eb77-bf0f525e46f5");
    auto drv = probe_driver().value();
    CHECK(drv.version == "580.159.04");
    CHECK(drv.source == "nvidia-smi");
    REQUIRE(drv.cuda);
    CHECK(drv.cuda->to_string() == "13.0");
    {
      ScopedEnv hide("CUDA_VISIBLE_DEVICES", "");
      CHECK(probe_gpus().value().empty());
    }
    {
      ScopedEnv by_uuid("CUDA_VISIBLE_DEVICES", "GPU-db0235f6");
      CHECK(probe_gpus().value().size() == 1);
    }
    // A two-GPU host with an A100 in MIG mode (tests/fixtures/mig): MIG devices come from `nvidia-smi -L`.
    const auto mig = test::fixtures_dir() / "mig";
    test::write(smi,
                "#!/bin/sh\ncase \"$1\" in\n  -q) cat '" + (test::h200() / "nvidia-smi-q.txt").string() + "';;\n  -L) cat '" +
                    (mig / "nvidia-smi-L.txt").string() + "';;\n  --query-gpu=*) cat '" +
                    (mig / "nvidia-smi-query.csv").string() + "';;\n  *) exit 9;;\nesac\n",
                0755);
    {
      ScopedEnv both("CUDA_VISIBLE_DEVICES", "MIG-1d4fa4b5-4e83-5b1e-9b33-5b0e1bd2a8c1,GPU-db0235f6");
      auto two = probe_gpus().value();
      REQUIRE(two.size() == 2);
      CHECK(two[0].name == "NVIDIA A100-SXM4-40GB MIG 1g.5gb");
      CHECK(two[0].cc == specs::ComputeCapability{8, 0});
      CHECK(two[0].mig_of == "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77");
      CHECK(two[1].name == "NVIDIA H200");
      CHECK(two[1].index == 1);
    }
    CHECK(probe_gpus().value().size() == 2); // unset: every GPU, no `-L` needed
    // A failing nvidia-smi (driver without a device, or not loaded) is a note, never an error.
    test::write(
        smi, "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n", 0755);
    notes.clear();
    CHECK(probe_gpus(&notes).value().empty());
    bool mentioned = false;
    for (auto& n : notes) mentioned = mentioned || n.text.find("couldn't communicate") != std::string::npos;
    CHECK(mentioned);
  }

  TEST_CASE("security (issue 60, 8): a FIFO or a device at a host file the probe reads is skipped, never waited on") {
    TempDir root;
    ScopedEnv sysfs("ENVFIX_SYSFS_ROOT", root.path().string());
    // A FIFO with no writer blocks open() and read() of a blocking reader forever: before the fix,
    // probe_tegra never returned here (ctest's timeout is the only bound this test has).
    std::filesystem::create_directories(root.path() / "proc/device-tree");
    REQUIRE(::mkfifo((root.path() / "proc/device-tree/compatible").c_str(), 0600) == 0);
    std::filesystem::create_directories(root.path() / "proc/driver/nvidia");
    REQUIRE(::mkfifo((root.path() / "proc/driver/nvidia/version").c_str(), 0600) == 0);
    std::filesystem::create_directories(root.path() / "etc");
    std::filesystem::create_symlink("/dev/zero", root.path() / "etc/nvpmodel.conf"); // endless: never read whole
    test::write(root.path() / "etc/nv_tegra_release", "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic\n");
    const auto t = probe_tegra();
    REQUIRE(t);
    CHECK(t->l4t == "36.4.3");
    CHECK(t->soc.empty()); // the FIFO was not read
    CHECK(probe::read_host_file("/proc/driver/nvidia/version") == std::nullopt);
    CHECK(probe::read_host_file("/etc/nv_tegra_release").has_value());
  }

} // TEST_SUITE integration
