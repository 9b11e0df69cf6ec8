#include <doctest/doctest.h>

#include <dlfcn.h>

#include "probe/driver_parsers.hpp"
#include "probe/host_facts.hpp"
#include "test_support.hpp"

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

TEST_SUITE("unit") {

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

} // TEST_SUITE unit

TEST_SUITE("integration") {

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
  std::vector<std::string> notes;
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
  std::vector<std::string> notes;
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
  // A failing nvidia-smi (driver without a device, or not loaded) is a note, never an error.
  test::write(smi, "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n", 0755);
  notes.clear();
  CHECK(probe_gpus(&notes).value().empty());
  bool mentioned = false;
  for (auto& n : notes) mentioned = mentioned || n.find("couldn't communicate") != std::string::npos;
  CHECK(mentioned);
}

} // TEST_SUITE integration
