#pragma once
// Fatbin container parsing (docs/kernels.md, Container layout, Entry layout, Entry flags, Parsing).
// Internal to wheel/.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::wheel {

inline constexpr std::uint32_t fatbin_magic = 0xBA55ED50;
inline constexpr std::size_t fatbin_header_size = 16;
inline constexpr std::size_t fatbin_entry_min_header = 64;

namespace fatbin_flags {
inline constexpr std::uint64_t debug = 0x2;
inline constexpr std::uint64_t lz4 = 0x2000;
inline constexpr std::uint64_t zstd = 0x8000;
inline constexpr std::uint64_t arch_specific = 0x100000;   // `a`
inline constexpr std::uint64_t family_specific = 0x200000; // `f`
} // namespace fatbin_flags

// Tells options.release about the bytes a forward-only reader has passed, a window at a time.
class Releaser {
public:
  Releaser(const ReadOptions& options, std::size_t start);
  // Everything before `pos` is done with; released when `pos` has crossed the next multiple of
  // the window (counted from `start`).
  void advance(std::size_t pos);
  // Releases the rest, up to `pos`.
  void finish(std::size_t pos);

private:
  const std::function<void(std::size_t, std::size_t)>& m_release;
  std::size_t m_window;
  std::size_t m_start;
  std::size_t m_done;
  std::size_t m_next;
};

// Parses the container whose header is at `pos`; every entry must tile [pos+headerSize, end)
// exactly. On success fills `out` and returns the container's end offset. On failure returns
// an Error that names `name` and the offending offset.
[[nodiscard]] Expected<std::size_t> parse_container(std::span<const std::uint8_t> bytes, std::size_t pos, std::string_view name,
                                                    FatbinContainer& out);

// A dedicated fatbin section (.nv_fatbin, __nv_relfatbin) or a raw .fatbin file: containers back
// to back. Zero padding is skipped; other bytes are skipped to the next magic with a warning; a
// magic whose container does not parse is an error (the section is damaged).
[[nodiscard]] Expected<void> walk_fatbin_section(std::span<const std::uint8_t> bytes, std::size_t off, std::size_t size,
                                                 std::string_view section, std::string_view name, KernelSet& out,
                                                 const ReadOptions& options = {});

// Any other region: accept only containers that parse strictly and hold at least one entry
// (code sections contain the magic as an immediate; docs/kernels.md, Embedded fatbins). Searches options.window
// bytes at a time and releases each window it has passed; a container that crosses a window's
// edge is parsed whole (and found whichever side of the edge its magic lies).
void scan_region(std::span<const std::uint8_t> bytes, std::size_t off, std::size_t size, std::string_view section, KernelSet& out,
                 const ReadOptions& options = {});

} // namespace envfix::wheel
