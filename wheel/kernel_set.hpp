#pragma once
// The GPU code embedded in a binary: fatbin containers and their entries (docs/kernels.md).
// Only headers are read (never payloads, never decompressed), so compressed entries cost nothing.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specs/gpu_arch.hpp"
#include "util/error.hpp"

namespace envfix::wheel {

struct KernelEntry {
  specs::GpuArch arch;
  bool compressed = false;
  std::string compression;             // "", "lz4", "zstd"
  std::uint64_t size = 0;              // payload bytes on disk
  std::uint64_t uncompressed_size = 0; // 0 when not compressed
  std::uint16_t code_major = 0;        // PTX: ISA version (9.0 for CUDA 13.0); SASS: cubin code version
  std::uint16_t code_minor = 0;
  bool debug = false;       // built with -G
  std::uint64_t offset = 0; // of the entry header, in the file (or archive member)
};

struct FatbinContainer {
  std::vector<KernelEntry> entries;
  std::string section;      // ".nv_fatbin", "__nv_relfatbin", ".ldata", … ("" for a raw file)
  std::uint64_t offset = 0; // of the container header
  std::string member;       // archive member ("libx.a(member.o)" style name), "" otherwise

  // A container with no SASS/PTX (empty, or LTO-IR only) holds nothing a GPU can load.
  [[nodiscard]] bool loadable() const;
  // Registered with the CUDA runtime (.nv_fatbin, __nv_relfatbin, or a raw .fatbin/.cubin), as
  // opposed to embedded as data in another section and loaded by the library itself
  // (cuModuleLoadData), which picks among its own containers per device.
  [[nodiscard]] bool registered() const;
};

// Coverage (will this code run on a device?) is judged in one place: wheel/coverage.hpp.
struct KernelSet {
  std::vector<FatbinContainer> containers;
  std::vector<std::string> warnings; // recoverable oddities (garbage skipped between containers)

  // Sorted (by arch number, then variant) unique names, e.g. {"sm_75", "sm_90", "sm_90a", "sm_120"}.
  [[nodiscard]] std::vector<std::string> sass() const;
  [[nodiscard]] std::vector<std::string> ptx() const;
  [[nodiscard]] std::vector<std::string> lto() const;
  [[nodiscard]] std::vector<specs::GpuArch> archs() const; // every distinct arch, sorted
  [[nodiscard]] std::size_t entry_count() const;
  [[nodiscard]] std::size_t compressed_count() const;
  [[nodiscard]] bool any_compressed() const;
  // ZSTD-compressed SASS/PTX needs a driver for CUDA >= 12.4 to load (docs/kernels.md, Compression).
  [[nodiscard]] bool has_zstd() const;
  [[nodiscard]] bool empty() const { return containers.empty(); }
  void append(KernelSet&& other);
};

// How a reader of a large file mapping keeps its resident set bounded.
struct ReadOptions {
  // Told of each range [offset, offset + length) of the input that the reader is done with, so
  // that a file mapping can drop those pages (MappedFile::drop). The reader does not read them
  // again (short of a malformed ELF whose sections overlap), so dropping costs no re-reads; the
  // bytes must stay readable all the same. Empty: nobody is told (in-memory input).
  std::function<void(std::size_t offset, std::size_t length)> release;
  // Data sections are searched for embedded fatbins this many bytes at a time, each window
  // released once searched; a fatbin section is released whenever this much has been walked.
  std::size_t window = std::size_t{32} << 20;
};

// Reads an ELF file (.so, executable, .o, raw .cubin), a static archive or a raw .fatbin.
// `name_for_errors` names the input in messages (errors carry the byte offset). The result does
// not depend on `options`.
[[nodiscard]] Expected<KernelSet> read_kernels(std::span<const std::uint8_t> bytes, std::string_view name_for_errors,
                                               const ReadOptions& options = {});
// The same on a file, memory-mapped, with pages dropped as they are finished with, so the peak
// resident set stays within a few windows whatever the file's size; a .whl is read with
// read_kernels_in_wheel and merged. Callers reading many files at once pass a smaller window.
[[nodiscard]] Expected<KernelSet> read_kernels_file(const std::filesystem::path& path, std::size_t window = ReadOptions{}.window);
// Member path → kernels for every member of a wheel (zip) that contains GPU code. Members are
// streamed and read into memory one at a time; the wheel is never copied.
[[nodiscard]] Expected<std::vector<std::pair<std::string, KernelSet>>> read_kernels_in_wheel(const std::filesystem::path& path);

// True for names worth reading inside a wheel: *.so, *.so.N, *.a, *.o, *.cubin, *.fatbin.
[[nodiscard]] bool may_contain_kernels(std::string_view member_name);

} // namespace envfix::wheel
