#include "wheel/elf.hpp"

#include <cstring>

namespace envfix::wheel {
namespace {

constexpr std::size_t ehdr_size = 64;
constexpr std::size_t shdr_size = 64;
constexpr std::size_t phdr_size = 56;

// [off, off+len) lies inside a buffer of `size` bytes (overflow-safe).
bool in_bounds(std::uint64_t off, std::uint64_t len, std::size_t size) { return off <= size && len <= size - off; }

// The section header table at `shoff` and the section names, into f.sections.
Expected<void> read_sections(std::span<const std::uint8_t> bytes, std::string_view name, std::uint64_t shoff,
                             std::uint16_t shentsize, std::uint64_t shnum, std::uint32_t shstrndx, ElfFile& f) {
  const std::uint8_t* b = bytes.data();
  const std::size_t size = bytes.size();
  if (shentsize < shdr_size) return fail(ErrorCode::invalid_input, "{}: e_shentsize {} < 64 (offset 58)", name, shentsize);
  if (!in_bounds(shoff, shdr_size, size))
    return fail(ErrorCode::invalid_input,
                "{}: section header table at offset {:#x} is past the end ({} bytes); "
                "the file is truncated",
                name, shoff, size);
  // Extended numbering: the real counts live in section 0 (ELF gABI).
  if (shnum == 0) shnum = load_u64(b + shoff + 32);
  if (shstrndx == 0xffff) shstrndx = load_u32(b + shoff + 40);
  if (shnum > (size - shoff) / shentsize)
    return fail(ErrorCode::invalid_input,
                "{}: {} section headers at offset {:#x} exceed the file ({} bytes); "
                "the file is truncated",
                name, shnum, shoff, size);
  struct Raw {
    std::uint32_t name;
    ElfSection s;
  };
  std::vector<Raw> raw;
  raw.reserve(shnum);
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint8_t* h = b + shoff + i * shentsize;
    Raw r;
    r.name = load_u32(h);
    r.s.type = load_u32(h + 4);
    r.s.flags = load_u64(h + 8);
    r.s.offset = load_u64(h + 24);
    r.s.size = load_u64(h + 32);
    if (r.s.type != sht_nobits && r.s.type != 0 && !in_bounds(r.s.offset, r.s.size, size))
      return fail(ErrorCode::invalid_input,
                  "{}: section {} [{:#x}, +{:#x}) is past the end ({} bytes); "
                  "the file is truncated",
                  name, i, r.s.offset, r.s.size, size);
    raw.push_back(std::move(r));
  }
  if (shnum > 0) {
    if (shstrndx >= shnum)
      return fail(ErrorCode::invalid_input, "{}: e_shstrndx {} out of range ({} sections)", name, shstrndx, shnum);
    const ElfSection& strtab = raw[shstrndx].s;
    if (strtab.type == sht_nobits || !in_bounds(strtab.offset, strtab.size, size))
      return fail(ErrorCode::invalid_input, "{}: section name table [{:#x}, +{:#x}) has no data in the file", name, strtab.offset,
                  strtab.size);
    const char* names = reinterpret_cast<const char*>(b + strtab.offset);
    for (auto& r : raw) {
      if (r.name >= strtab.size) {
        if (r.name != 0 || strtab.size != 0)
          return fail(ErrorCode::invalid_input,
                      "{}: section name offset {} outside the name table "
                      "(size {}) at offset {:#x}",
                      name, r.name, strtab.size, strtab.offset);
      } else {
        const void* nul = std::memchr(names + r.name, 0, strtab.size - r.name);
        std::size_t len = nul ? static_cast<const char*>(nul) - (names + r.name) : strtab.size - r.name;
        r.s.name.assign(names + r.name, len);
      }
      f.sections.push_back(std::move(r.s));
    }
  }
  return {};
}

} // namespace

bool is_elf(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "\177ELF", 4) == 0; // \177 = 0x7f
}

Expected<ElfFile> ElfFile::parse(std::span<const std::uint8_t> bytes, std::string_view name) {
  const std::uint8_t* b = bytes.data();
  const std::size_t size = bytes.size();
  if (!is_elf(bytes)) return fail(ErrorCode::invalid_input, "{}: not an ELF file (offset 0)", name);
  if (size < ehdr_size)
    return fail(ErrorCode::invalid_input, "{}: truncated ELF header ({} bytes, need 64) at offset 0", name, size);
  if (b[4] != 2)
    return make_error(ErrorCode::invalid_input, util::msg("{}: ELF class {} is not supported (offset 4)", name, b[4]),
                      util::msg("only 64-bit ELF files carry CUDA kernels for current GPUs"));
  if (b[5] != 1) return fail(ErrorCode::invalid_input, "{}: big-endian ELF is not supported (offset 5)", name);

  ElfFile f;
  f.osabi = b[7];
  f.abiversion = b[8];
  f.type = load_u16(b + 16);
  f.machine = load_u16(b + 18);
  f.flags = load_u32(b + 48);
  const std::uint64_t phoff = load_u64(b + 32);
  const std::uint64_t shoff = load_u64(b + 40);
  const std::uint16_t phentsize = load_u16(b + 54);
  std::uint64_t phnum = load_u16(b + 56);
  const std::uint16_t shentsize = load_u16(b + 58);
  std::uint64_t shnum = load_u16(b + 60);
  std::uint32_t shstrndx = load_u16(b + 62);

  if (shoff != 0) ENVFIX_TRY_VOID(read_sections(bytes, name, shoff, shentsize, shnum, shstrndx, f));
  if (phoff != 0 && phnum != 0) {
    if (phentsize < phdr_size) return fail(ErrorCode::invalid_input, "{}: e_phentsize {} < 56 (offset 54)", name, phentsize);
    if (!in_bounds(phoff, phnum * phentsize, size))
      return fail(ErrorCode::invalid_input,
                  "{}: program headers at offset {:#x} are past the end ({} bytes); "
                  "the file is truncated",
                  name, phoff, size);
    for (std::uint64_t i = 0; i < phnum; ++i) {
      const std::uint8_t* h = b + phoff + i * phentsize;
      ElfSegment s{load_u32(h), load_u64(h + 8), load_u64(h + 32)};
      if (s.type == pt_load && !in_bounds(s.offset, s.filesz, size))
        return fail(ErrorCode::invalid_input,
                    "{}: segment {} [{:#x}, +{:#x}) is past the end ({} bytes); "
                    "the file is truncated",
                    name, i, s.offset, s.filesz, size);
      f.segments.push_back(s);
    }
  }
  return f;
}

} // namespace envfix::wheel
