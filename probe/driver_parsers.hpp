#pragma once
// Pure parsers for the text sources of GPU and driver facts (captured real text in
// tests/fixtures/gpu-h200). The I/O shells in gpu_probe.cpp only read and call these.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/host_facts.hpp"
#include "specs/cuda_version.hpp"
#include "util/error.hpp"

namespace envfix::probe {

// /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  …"
[[nodiscard]] Expected<std::string> parse_proc_driver_version(std::string_view text);
// /sys/module/nvidia/version: "580.159.04\n"
[[nodiscard]] Expected<std::string> parse_sys_module_version(std::string_view text);

// One row of `nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv`.
struct SmiCsvRow {
  int index = 0;
  std::string name;
  std::string uuid;
  std::optional<specs::ComputeCapability> cc; // absent on drivers older than 510 ("[N/A]")
  std::string driver_version;
  std::uint64_t memory_bytes = 0;
};
// Header line required (column order is taken from it); "memory.total [MiB]" values end in " MiB".
[[nodiscard]] Expected<std::vector<SmiCsvRow>> parse_nvidia_smi_csv(std::string_view text);
// The argv that produces the CSV parse_nvidia_smi_csv reads.
[[nodiscard]] std::vector<std::string> nvidia_smi_csv_argv(const std::string& nvidia_smi);

// `nvidia-smi -q`: driver version, "CUDA Version" (the highest the driver supports) and the GPUs.
struct SmiReport {
  std::string driver_version;
  std::optional<specs::CudaVersion> cuda;
  struct Gpu {
    std::string bus_id; // "00000000:00:06.0"
    std::string name;   // Product Name
    std::string architecture;
    std::string uuid;
    int minor_number = -1;
    std::uint64_t memory_bytes = 0; // FB Memory Usage / Total
  };
  std::vector<Gpu> gpus;
};
[[nodiscard]] Expected<SmiReport> parse_nvidia_smi_q(std::string_view text);

// `nvidia-smi -L`: "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-…)", and under a GPU in MIG mode
// "  MIG 1g.5gb      Device  0: (UUID: MIG-…)".
struct SmiListGpu {
  int index = 0;
  std::string name, uuid;
  std::vector<MigDevice> mig;
};
[[nodiscard]] Expected<std::vector<SmiListGpu>> parse_nvidia_smi_list(std::string_view text);

// cuDriverGetVersion's integer: 13000 → 13.0, 12080 → 12.8.
[[nodiscard]] specs::CudaVersion cuda_version_from_int(int driver_version);

// CUDA_VISIBLE_DEVICES as the CUDA runtime reads it: a comma list of indices or UUIDs (full or a
// unique prefix, with or without "GPU-"), or MIG devices ("MIG-<uuid>", or the older
// "MIG-GPU-<uuid>/<gi>/<ci>" naming the GPU's instance); parsing stops at the first entry that is invalid or names
// no device, and a repeated device makes the whole list invalid (no device visible). nullopt `value`
// means "unset": every device, in order. The result renumbers `index` from 0 and keeps
// physical_index.
[[nodiscard]] std::vector<GpuInfo> apply_cuda_visible_devices(const std::vector<GpuInfo>& all,
                                                              const std::optional<std::string>& value);

} // namespace envfix::probe
