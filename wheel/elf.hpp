#pragma once
// A minimal, bounds-checked ELF64 little-endian reader: section and program headers only.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::wheel {

inline constexpr std::uint16_t em_cuda = 190;
inline constexpr std::uint32_t sht_nobits = 8;
inline constexpr std::uint32_t pt_load = 1;
inline constexpr std::uint64_t shf_execinstr = 0x4;

struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct ElfSegment {
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t filesz = 0;
};

struct ElfFile {
  std::uint16_t type = 0;    // ET_REL 1, ET_EXEC 2, ET_DYN 3
  std::uint16_t machine = 0; // EM_X86_64 62, EM_AARCH64 183, EM_CUDA 190
  std::uint32_t flags = 0;   // e_flags (cubins: the SM, docs/kernels.md, Raw cubins and e_flags)
  std::uint8_t osabi = 0;
  std::uint8_t abiversion = 0;
  std::vector<ElfSection> sections;
  std::vector<ElfSegment> segments;

  // Every offset and size is checked against the buffer; errors name `name` and the offset.
  [[nodiscard]] static Expected<ElfFile> parse(std::span<const std::uint8_t> bytes, std::string_view name);
};

[[nodiscard]] bool is_elf(std::span<const std::uint8_t> bytes);

// Little-endian loads without alignment requirements (callers bounds-check first).
[[nodiscard]] inline std::uint16_t load_u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
[[nodiscard]] inline std::uint32_t load_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}
[[nodiscard]] inline std::uint64_t load_u64(const std::uint8_t* p) {
  return std::uint64_t(load_u32(p)) | (std::uint64_t(load_u32(p + 4)) << 32);
}

} // namespace envfix::wheel
