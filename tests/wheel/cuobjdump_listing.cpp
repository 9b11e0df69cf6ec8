#include "tests/wheel/cuobjdump_listing.hpp"

#include <fmt/core.h>

namespace envfix::test {

std::map<std::string, std::size_t> cuobjdump_arch_counts(std::string_view listing) {
  std::map<std::string, std::size_t> out;
  while (!listing.empty()) {
    auto nl = listing.find('\n');
    std::string_view line = listing.substr(0, nl);
    listing = nl == std::string_view::npos ? std::string_view{} : listing.substr(nl + 1);
    const bool elf = line.starts_with("ELF file"), ptx = line.starts_with("PTX file");
    if (!elf && !ptx) continue;
    // The arch is the next-to-last dot-separated field of the file name.
    auto last_dot = line.rfind('.');
    if (last_dot == std::string_view::npos) continue;
    auto prev_dot = line.rfind('.', last_dot - 1);
    if (prev_dot == std::string_view::npos) continue;
    std::string arch(line.substr(prev_dot + 1, last_dot - prev_dot - 1));
    if (ptx && arch.starts_with("sm_")) arch = "compute_" + arch.substr(3);
    ++out[arch];
  }
  return out;
}

std::map<std::string, std::size_t> cuobjdump_view(const wheel::KernelSet& ks) {
  std::map<std::string, std::size_t> out;
  for (const auto& c : ks.containers) {
    if (c.section != ".nv_fatbin") continue;
    for (const auto& e : c.entries) {
      auto a = e.arch;
      if (a.kind == specs::GpuArch::Kind::lto) continue;
      if (a.kind == specs::GpuArch::Kind::sass && a.variant == specs::GpuArch::Variant::f)
        a.variant = specs::GpuArch::Variant::plain;
      ++out[a.to_string()];
    }
  }
  return out;
}

std::string diff_counts(const std::map<std::string, std::size_t>& cuobjdump, const std::map<std::string, std::size_t>& envfix) {
  std::string out;
  auto get = [](const auto& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  };
  std::map<std::string, int> keys;
  for (auto& [k, v] : cuobjdump) keys[k];
  for (auto& [k, v] : envfix) keys[k];
  for (auto& [k, unused] : keys)
    if (get(cuobjdump, k) != get(envfix, k))
      out += fmt::format("{}: cuobjdump {}, envfix {}\n", k, get(cuobjdump, k), get(envfix, k));
  return out;
}

} // namespace envfix::test
