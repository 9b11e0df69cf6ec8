// probe_tegra (probe/host_facts.hpp): a Jetson is known by its device tree (`nvidia,tegra234` Orin,
// `nvidia,tegra264` Thor), /etc/nv_tegra_release (the L4T release) and a "-tegra" kernel. Any one
// of them marks the host; each that was read is named in `evidence`.
#include <charconv>

#include <fmt/format.h>

#include "probe/base_env.hpp"
#include "probe/host_facts.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::probe {

namespace {

// Device-tree strings are NUL-terminated and NUL-separated.
std::vector<std::string> dt_strings(const std::string& raw) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < raw.size()) {
    auto end = raw.find('\0', at);
    if (end == std::string::npos) end = raw.size();
    if (auto s = util::trim(std::string_view(raw).substr(at, end - at)); !s.empty()) out.emplace_back(s);
    at = end + 1;
  }
  return out;
}

// Whole decimal number at the start of `s` (after spaces); -1 when none.
int number_at(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p != s.data() ? v : -1;
}

// nvpmodel's state: /var/lib/nvpmodel/status ("pmode:0000"), named by /etc/nvpmodel.conf's
// "< POWER_MODEL ID=0 NAME=MAXN >" lines.
std::string power_mode() {
  auto status = read_host_file("/var/lib/nvpmodel/status");
  if (!status) return "";
  auto at = status->find("pmode:");
  if (at == std::string::npos) return "";
  int id = number_at(std::string_view(*status).substr(at + 6));
  if (id < 0) return "";
  if (auto conf = read_host_file("/etc/nvpmodel.conf")) {
    const std::string key = fmt::format("POWER_MODEL ID={} NAME=", id);
    if (auto k = conf->find(key); k != std::string::npos) {
      auto name = std::string_view(*conf).substr(k + key.size());
      name = name.substr(0, name.find_first_of(" >\n"));
      if (!name.empty()) return fmt::format("{} ({})", name, id);
    }
  }
  return fmt::format("mode {}", id);
}

} // namespace

std::string parse_l4t_release(std::string_view text) {
  auto r = text.find("# R");
  auto rev = text.find("REVISION:");
  if (r == std::string_view::npos || rev == std::string_view::npos) return "";
  int major = number_at(text.substr(r + 3));
  auto revision = util::trim(text.substr(rev + 9, text.find(',', rev) - rev - 9));
  if (major < 0 || revision.empty() || number_at(revision) < 0) return "";
  return fmt::format("{}.{}", major, revision);
}

std::optional<TegraInfo> probe_tegra() {
  TegraInfo t;
  if (auto c = read_host_file("/proc/device-tree/compatible")) {
    t.compatible = dt_strings(*c);
    for (const auto& s : t.compatible)
      if (s.starts_with("nvidia,tegra")) t.soc = s.substr(7);
    if (!t.soc.empty()) t.evidence.push_back(fmt::format("/proc/device-tree/compatible: nvidia,{}", t.soc));
  }
  if (auto m = read_host_file("/proc/device-tree/model"); m && !t.soc.empty()) {
    auto names = dt_strings(*m);
    if (!names.empty()) t.model = names.front();
  }
  if (auto r = read_host_file("/etc/nv_tegra_release")) {
    t.l4t = parse_l4t_release(*r);
    if (!t.l4t.empty()) t.evidence.push_back(fmt::format("/etc/nv_tegra_release: L4T R{}", t.l4t));
  }
  if (auto k = read_host_file("/proc/sys/kernel/osrelease")) {
    t.kernel = std::string(util::trim(*k));
    if (t.kernel.find("-tegra") != std::string::npos) t.evidence.push_back(fmt::format("kernel {}", t.kernel));
  }
  if (t.evidence.empty()) return std::nullopt;
  t.power_mode = power_mode();
  return t;
}

} // namespace envfix::probe
