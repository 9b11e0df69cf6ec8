#include "wheel/fatbin.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "wheel/elf.hpp"

namespace envfix::wheel {
namespace {

constexpr std::uint8_t magic_bytes[4] = {0x50, 0xED, 0x55, 0xBA};

// Offset of the next magic in [from, end), or end.
std::size_t find_magic(const std::uint8_t* b, std::size_t from, std::size_t end) {
  if (from >= end) return end;
  const void* hit = memmem(b + from, end - from, magic_bytes, sizeof magic_bytes);
  return hit ? static_cast<std::size_t>(static_cast<const std::uint8_t*>(hit) - b) : end;
}

} // namespace

namespace {
// The first multiple of `window` past `pos`, counting from `start` (saturating).
std::size_t next_edge(std::size_t start, std::size_t window, std::size_t pos) {
  const std::size_t rest = window - (pos - start) % window;
  return rest > SIZE_MAX - pos ? SIZE_MAX : pos + rest;
}
} // namespace

Releaser::Releaser(const ReadOptions& options, std::size_t start)
    : m_release(options.release), m_window(std::max<std::size_t>(options.window, 1)), m_start(start), m_done(start),
      m_next(next_edge(start, m_window, start)) {}

void Releaser::advance(std::size_t pos) {
  if (!m_release || pos < m_next) return;
  finish(pos);
  m_next = next_edge(m_start, m_window, pos);
}

void Releaser::finish(std::size_t pos) {
  if (!m_release || pos <= m_done) return;
  m_release(m_done, pos - m_done);
  m_done = pos;
}

Expected<std::size_t> parse_container(std::span<const std::uint8_t> bytes, std::size_t pos, std::string_view name,
                                      FatbinContainer& out) {
  const std::uint8_t* b = bytes.data();
  const std::size_t limit = bytes.size();
  if (pos > limit || limit - pos < fatbin_header_size)
    return fail(ErrorCode::invalid_input, "{}: truncated fatbin header at offset {:#x}", name, pos);
  if (load_u32(b + pos) != fatbin_magic) return fail(ErrorCode::invalid_input, "{}: no fatbin magic at offset {:#x}", name, pos);
  const std::uint16_t version = load_u16(b + pos + 4);
  const std::uint16_t header_size = load_u16(b + pos + 6);
  const std::uint64_t fat_size = load_u64(b + pos + 8);
  if (version != 1)
    return fail(ErrorCode::invalid_input, "{}: fatbin container at offset {:#x} has version {} (expected 1)", name, pos, version);
  if (header_size < fatbin_header_size || header_size > limit - pos)
    return fail(ErrorCode::invalid_input, "{}: fatbin container at offset {:#x} has header size {}", name, pos, header_size);
  const std::size_t start = pos + header_size;
  if (fat_size > limit - start)
    return fail(ErrorCode::invalid_input,
                "{}: fatbin container at offset {:#x} claims {} bytes but only {} remain; the file is truncated", name, pos,
                fat_size, limit - start);
  const std::size_t end = start + fat_size;

  out.offset = pos;
  out.entries.clear();
  std::size_t e = start;
  while (e < end) {
    if (end - e < fatbin_entry_min_header)
      return fail(ErrorCode::invalid_input,
                  "{}: fatbin entry at offset {:#x} is cut off ({} bytes left of "
                  "the container at {:#x})",
                  name, e, end - e, pos);
    const std::uint8_t* h = b + e;
    const std::uint16_t kind = load_u16(h);
    const std::uint16_t entry_version = load_u16(h + 2);
    const std::uint32_t hs = load_u32(h + 4);
    const std::uint64_t payload = load_u64(h + 8);
    if (entry_version != 0x0101)
      return fail(ErrorCode::invalid_input,
                  "{}: fatbin entry at offset {:#x} has version {:#06x} "
                  "(expected 0x0101)",
                  name, e, entry_version);
    if (hs < fatbin_entry_min_header || hs > end - e)
      return fail(ErrorCode::invalid_input, "{}: fatbin entry at offset {:#x} has header size {}", name, e, hs);
    if (payload > end - e - hs)
      return fail(ErrorCode::invalid_input,
                  "{}: fatbin entry at offset {:#x} has payload {} bytes past the "
                  "end of its container (at {:#x})",
                  name, e, payload, pos);
    specs::GpuArch::Kind k;
    switch (kind) {
    case 1: k = specs::GpuArch::Kind::ptx; break;
    case 2:
    case 4: k = specs::GpuArch::Kind::sass; break; // 4: obsolete old-style cubin
    case 8: k = specs::GpuArch::Kind::lto; break;
    default: return fail(ErrorCode::invalid_input, "{}: fatbin entry at offset {:#x} has unknown kind {}", name, e, kind);
    }
    const std::uint32_t arch = load_u32(h + 0x1C);
    if (arch < 10 || arch > 999)
      return fail(ErrorCode::invalid_input, "{}: fatbin entry at offset {:#x} has arch {} (expected 10..999)", name, e, arch);
    const std::uint64_t flags = load_u64(h + 0x28);
    auto variant = (flags & fatbin_flags::arch_specific)     ? specs::GpuArch::Variant::a
                   : (flags & fatbin_flags::family_specific) ? specs::GpuArch::Variant::f
                                                             : specs::GpuArch::Variant::plain;
    if (k == specs::GpuArch::Kind::lto) variant = specs::GpuArch::Variant::plain;
    KernelEntry entry;
    entry.arch = specs::GpuArch::from_number(k, static_cast<int>(arch), variant);
    entry.compression = (flags & fatbin_flags::zstd) ? "zstd" : (flags & fatbin_flags::lz4) ? "lz4" : "";
    entry.compressed = !entry.compression.empty();
    entry.size = payload;
    entry.uncompressed_size = load_u64(h + 0x38);
    entry.code_minor = load_u16(h + 0x18);
    entry.code_major = load_u16(h + 0x1A);
    entry.debug = (flags & fatbin_flags::debug) != 0;
    entry.offset = e;
    out.entries.push_back(std::move(entry));
    e += hs + payload;
  }
  return end;
}

Expected<void> walk_fatbin_section(std::span<const std::uint8_t> bytes, std::size_t off, std::size_t size,
                                   std::string_view section, std::string_view name, KernelSet& out, const ReadOptions& options) {
  const std::uint8_t* b = bytes.data();
  if (off > bytes.size() || size > bytes.size() - off)
    return fail(ErrorCode::invalid_input, "{}: section {} [{:#x}, +{:#x}) is past the end", name, section, off, size);
  const std::size_t end = off + size;
  // Parse within the section only: a container may not spill out of it.
  auto region = bytes.first(end);
  Releaser released(options, off);
  std::size_t pos = off;
  while (pos < end) {
    released.advance(pos); // only headers are read, but a 2 GB section has many of them
    if (end - pos >= 4 && load_u32(b + pos) == fatbin_magic) {
      FatbinContainer c;
      c.section = std::string(section);
      auto next = parse_container(region, pos, name, c);
      if (!next)
        return std::unexpected(std::move(next.error()).context(util::msg("{}: damaged fatbin in section {}", name, section)));
      out.containers.push_back(std::move(c));
      pos = *next;
      continue;
    }
    std::size_t z = pos;
    while (z < end && b[z] == 0) ++z;
    if (z == end) break; // trailing padding
    if (z != pos) {
      pos = z;
      continue;
    }
    std::size_t next = find_magic(b, pos + 1, end);
    out.warnings.push_back(
        fmt::format("{}: skipped {} unrecognised bytes at offset {:#x} in section {}", name, next - pos, pos, section));
    pos = next;
  }
  released.finish(end);
  return {};
}

void scan_region(std::span<const std::uint8_t> bytes, std::size_t off, std::size_t size, std::string_view section, KernelSet& out,
                 const ReadOptions& options) {
  if (off > bytes.size() || size > bytes.size() - off) return;
  const std::size_t end = off + size;
  const std::size_t window = std::max<std::size_t>(options.window, 1);
  auto region = bytes.first(end);
  Releaser released(options, off);
  std::size_t pos = off;
  while (pos < end) {
    // Magics that start in [pos, stop); reading 3 bytes past `stop` finds one across its edge.
    // Windows lie on a fixed grid from `off`, the releaser's, so that a container parsed across a
    // window's edge does not let the next window start late and two windows stay resident.
    const std::size_t stop = std::min(end, next_edge(off, window, pos));
    const std::size_t limit = std::min(end, stop + 3);
    const std::size_t hit = find_magic(bytes.data(), pos, limit);
    if (hit == limit) {
      pos = stop;
    } else {
      FatbinContainer c;
      auto next = parse_container(region, hit, "", c);
      if (next && !c.entries.empty()) {
        c.section = std::string(section);
        out.containers.push_back(std::move(c));
        pos = *next;
      } else {
        pos = hit + 1;
      }
    }
    released.advance(pos);
  }
  released.finish(end);
}

} // namespace envfix::wheel
