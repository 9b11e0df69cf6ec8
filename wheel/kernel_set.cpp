#include "wheel/kernel_set.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include <archive.h>
#include <archive_entry.h>

#include "util/fs.hpp"
#include "wheel/elf.hpp"
#include "wheel/fatbin.hpp"

namespace envfix::wheel {
namespace {

using specs::GpuArch;

constexpr std::string_view ar_magic = "!<arch>\n";
constexpr std::string_view thin_ar_magic = "!<thin>\n";

bool starts_with(std::span<const std::uint8_t> b, std::string_view s) {
  return b.size() >= s.size() && std::memcmp(b.data(), s.data(), s.size()) == 0;
}

bool is_fatbin(std::span<const std::uint8_t> b) { return b.size() >= 4 && load_u32(b.data()) == fatbin_magic; }

// Sections that never hold embedded fatbins: symbol/string tables, relocations, debug info,
// unwind tables, the wrapper array (pointers; docs/kernels.md, The wrapper) and executable code,
// whose immediates can contain the magic (docs/kernels.md, Embedded fatbins).
bool skip_scan(const ElfSection& s) {
  if (s.type == sht_nobits || s.type == 0 || s.size == 0) return true;
  if (s.flags & shf_execinstr) return true;
  static constexpr std::string_view exact[] = {".symtab",  ".strtab", ".dynsym",  ".dynstr", ".shstrtab",    ".nvFatBinSegment",
                                               ".dynamic", ".interp", ".comment", ".hash",   ".symtab_shndx"};
  static constexpr std::string_view prefixes[] = {".rela",   ".rel.", ".debug",      ".zdebug",     ".eh_frame",         ".gnu",
                                                  ".note",   ".got",  ".init_array", ".fini_array", ".gcc_except_table", ".tbss",
                                                  ".stapsdt"};
  for (auto e : exact)
    if (s.name == e) return true;
  for (auto p : prefixes)
    if (s.name.starts_with(p)) return true;
  return false;
}

void shift_offsets(KernelSet& ks, std::uint64_t base, const std::string& member) {
  for (auto& c : ks.containers) {
    c.offset += base;
    for (auto& e : c.entries) e.offset += base;
    if (c.member.empty()) c.member = member;
  }
}

// A raw cubin (EM_CUDA ELF): the SM comes from e_flags (docs/kernels.md, Raw cubins and e_flags).
Expected<KernelSet> read_cubin(const ElfFile& elf, std::size_t size, std::string_view name) {
  int sm = 0;
  bool arch_specific = false;
  if (elf.abiversion >= 8) { // ELF ABI v2 (CUDA 13 ptxas)
    sm = static_cast<int>((elf.flags >> 8) & 0xff);
    arch_specific = (elf.flags & 0x8) != 0;
  } else {
    sm = static_cast<int>(elf.flags & 0xff);
    arch_specific = (elf.flags & 0x800) != 0;
  }
  if (sm < 10)
    return fail(ErrorCode::invalid_input, "{}: CUDA cubin with e_flags {:#x} names no SM (offset 48)", name, elf.flags);
  KernelEntry e;
  e.arch = GpuArch::from_number(GpuArch::Kind::sass, sm, arch_specific ? GpuArch::Variant::a : GpuArch::Variant::plain);
  e.size = size;
  KernelSet ks;
  ks.containers.push_back(FatbinContainer{{std::move(e)}, "", 0, ""});
  return ks;
}

Expected<KernelSet> read_elf(std::span<const std::uint8_t> bytes, std::string_view name, const ReadOptions& options) {
  auto elf = ENVFIX_TRY(ElfFile::parse(bytes, name));
  if (elf.machine == em_cuda) return read_cubin(elf, bytes.size(), name);
  KernelSet ks;
  if (elf.sections.empty()) {
    for (const auto& seg : elf.segments)
      if (seg.type == pt_load) scan_region(bytes, seg.offset, seg.filesz, "PT_LOAD", ks, options);
    return ks;
  }
  for (const auto& s : elf.sections) {
    if (s.name == ".nv_fatbin" || s.name == "__nv_relfatbin") {
      if (s.type == sht_nobits) continue;
      if (auto r = walk_fatbin_section(bytes, s.offset, s.size, s.name, name, ks, options); !r)
        return std::unexpected(std::move(r.error()));
    } else if (!skip_scan(s)) {
      scan_region(bytes, s.offset, s.size, s.name, ks, options);
    }
  }
  return ks;
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.remove_suffix(1);
  return s;
}

Expected<KernelSet> read_archive(std::span<const std::uint8_t> bytes, std::string_view name, const ReadOptions& options) {
  const auto* b = reinterpret_cast<const char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::string long_names; // a copy: the bytes it came from are released with the headers
  KernelSet ks;
  std::size_t pos = ar_magic.size();
  Releaser released(options, 0); // member headers; the members release their own bytes
  while (pos < size) {
    released.advance(pos);
    if (size - pos < 60) return fail(ErrorCode::invalid_input, "{}: truncated archive member header at offset {:#x}", name, pos);
    std::string_view hdr(b + pos, 60);
    if (hdr.substr(58, 2) != "`\n")
      return fail(ErrorCode::invalid_input, "{}: bad archive member header at offset {:#x} (no terminator)", name, pos);
    std::string_view size_field = trim_right(hdr.substr(48, 10));
    std::uint64_t msize = 0;
    if (size_field.empty()) return fail(ErrorCode::invalid_input, "{}: archive member at offset {:#x} has no size", name, pos);
    for (char c : size_field) {
      if (c < '0' || c > '9')
        return fail(ErrorCode::invalid_input, "{}: archive member at offset {:#x} has size '{}'", name, pos, size_field);
      msize = msize * 10 + static_cast<unsigned>(c - '0');
    }
    std::size_t data = pos + 60;
    if (msize > size - data)
      return fail(ErrorCode::invalid_input,
                  "{}: archive member at offset {:#x} claims {} bytes but only {} remain; "
                  "the file is truncated",
                  name, pos, msize, size - data);
    std::string_view raw_name = trim_right(hdr.substr(0, 16));
    std::string member;
    std::size_t body = data, body_size = msize;
    if (raw_name == "/" || raw_name == "/SYM64/" || raw_name == "__.SYMDEF" || raw_name == "__.SYMDEF SORTED") {
      // symbol table
    } else if (raw_name == "//") {
      long_names.assign(b + data, msize);
    } else {
      if (raw_name.starts_with("#1/")) { // BSD: the name precedes the data
        std::uint64_t n = 0;
        for (char c : raw_name.substr(3)) n = (c >= '0' && c <= '9') ? n * 10 + static_cast<unsigned>(c - '0') : n;
        if (n > msize)
          return fail(ErrorCode::invalid_input, "{}: archive member name at offset {:#x} longer than the member", name, pos);
        member = trim_right(std::string_view(b + data, n));
        body += n;
        body_size -= n;
      } else if (raw_name.size() > 1 && raw_name[0] == '/' && raw_name[1] >= '0' && raw_name[1] <= '9') {
        std::uint64_t n = 0;
        for (char c : raw_name.substr(1)) n = (c >= '0' && c <= '9') ? n * 10 + static_cast<unsigned>(c - '0') : n;
        if (n >= long_names.size())
          return fail(ErrorCode::invalid_input,
                      "{}: archive member at offset {:#x} names long-name offset {} "
                      "outside the // table ({} bytes)",
                      name, pos, n, long_names.size());
        std::string_view rest = std::string_view(long_names).substr(n);
        member = rest.substr(0, std::min(rest.find("/\n"), rest.find('\n')));
      } else {
        member = raw_name.ends_with('/') ? raw_name.substr(0, raw_name.size() - 1) : raw_name;
      }
      auto mbytes = bytes.subspan(body, body_size);
      if (is_elf(mbytes) || is_fatbin(mbytes)) {
        std::string mname = fmt::format("{}({})", name, member);
        ReadOptions sub_options{{}, options.window};
        if (options.release)
          sub_options.release = [&options, body](std::size_t off, std::size_t len) { options.release(body + off, len); };
        auto sub = ENVFIX_TRY(read_kernels(mbytes, mname, sub_options));
        shift_offsets(sub, body, member);
        ks.append(std::move(sub));
      }
    }
    pos = data + msize + (msize & 1);
  }
  released.finish(size);
  return ks;
}

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

} // namespace

bool FatbinContainer::loadable() const {
  return std::any_of(entries.begin(), entries.end(), [](const KernelEntry& e) { return e.arch.kind != GpuArch::Kind::lto; });
}

bool FatbinContainer::registered() const { return section.empty() || section == ".nv_fatbin" || section == "__nv_relfatbin"; }

std::vector<GpuArch> KernelSet::archs() const {
  std::set<GpuArch> s;
  for (const auto& c : containers)
    for (const auto& e : c.entries) s.insert(e.arch);
  return {s.begin(), s.end()};
}

namespace {
std::vector<std::string> names_of(const KernelSet& ks, GpuArch::Kind kind) {
  std::vector<std::string> out;
  for (const auto& a : ks.archs())
    if (a.kind == kind) out.push_back(a.to_string());
  return out;
}
} // namespace

std::vector<std::string> KernelSet::sass() const { return names_of(*this, GpuArch::Kind::sass); }
std::vector<std::string> KernelSet::ptx() const { return names_of(*this, GpuArch::Kind::ptx); }
std::vector<std::string> KernelSet::lto() const { return names_of(*this, GpuArch::Kind::lto); }

std::size_t KernelSet::entry_count() const {
  std::size_t n = 0;
  for (const auto& c : containers) n += c.entries.size();
  return n;
}

std::size_t KernelSet::compressed_count() const {
  std::size_t n = 0;
  for (const auto& c : containers)
    for (const auto& e : c.entries) n += e.compressed ? 1 : 0;
  return n;
}

bool KernelSet::any_compressed() const { return compressed_count() > 0; }

bool KernelSet::has_zstd() const {
  for (const auto& c : containers)
    for (const auto& e : c.entries)
      if (e.compression == "zstd" && e.arch.kind != GpuArch::Kind::lto) return true;
  return false;
}

void KernelSet::append(KernelSet&& other) {
  containers.insert(containers.end(), std::make_move_iterator(other.containers.begin()),
                    std::make_move_iterator(other.containers.end()));
  warnings.insert(warnings.end(), std::make_move_iterator(other.warnings.begin()), std::make_move_iterator(other.warnings.end()));
}

Expected<KernelSet> read_kernels(std::span<const std::uint8_t> bytes, std::string_view name, const ReadOptions& options) {
  if (starts_with(bytes, ar_magic)) return read_archive(bytes, name, options);
  if (starts_with(bytes, thin_ar_magic)) {
    KernelSet ks;
    ks.warnings.push_back(fmt::format("{}: thin archive; its members are separate files, inspect those", name));
    return ks;
  }
  if (is_fatbin(bytes)) {
    KernelSet ks;
    if (auto r = walk_fatbin_section(bytes, 0, bytes.size(), "", name, ks, options); !r)
      return std::unexpected(std::move(r.error()));
    return ks;
  }
  if (is_elf(bytes)) return read_elf(bytes, name, options);
  return make_error(ErrorCode::invalid_input, util::msg("{}: not an ELF file, static archive or fatbin (offset 0)", name),
                    util::msg("envfix inspect reads .so, .o, .a, .cubin, .fatbin and .whl files"));
}

bool may_contain_kernels(std::string_view n) {
  auto slash = n.rfind('/');
  if (slash != std::string_view::npos) n.remove_prefix(slash + 1);
  for (std::string_view ext : {".so", ".a", ".o", ".cubin", ".fatbin"})
    if (n.ends_with(ext) && n.size() > ext.size()) return true;
  // libfoo.so.12, libfoo.so.12.1.0
  auto so = n.find(".so.");
  if (so == std::string_view::npos || so == 0) return false;
  auto rest = n.substr(so + 4);
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

Expected<std::vector<std::pair<std::string, KernelSet>>> read_kernels_in_wheel(const std::filesystem::path& path) {
  std::unique_ptr<archive, ArchiveFree> a(archive_read_new());
  if (!a) return fail(ErrorCode::internal, "{}: libarchive could not allocate a reader", path.string());
  archive_read_support_format_zip(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    return fail(ErrorCode::invalid_input, "{}: cannot open as a zip/wheel: {}", path.string(),
                archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error");
  std::vector<std::pair<std::string, KernelSet>> out;
  std::vector<std::uint8_t> buf;
  archive_entry* entry = nullptr;
  for (;;) {
    int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: damaged zip: {}", path.string(),
                  archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error");
    const char* pn = archive_entry_pathname(entry);
    std::string member = pn ? pn : "";
    if (archive_entry_filetype(entry) != AE_IFREG || !may_contain_kernels(member)) {
      archive_read_data_skip(a.get());
      continue;
    }
    buf.clear();
    if (archive_entry_size_is_set(entry) && archive_entry_size(entry) > 0)
      buf.reserve(static_cast<std::size_t>(archive_entry_size(entry)));
    std::uint8_t chunk[1 << 16];
    bool checked = false, wanted = true;
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), chunk, sizeof chunk);
      if (n < 0)
        return fail(ErrorCode::invalid_input, "{}: cannot read member {}: {}", path.string(), member,
                    archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error");
      if (n == 0) break;
      buf.insert(buf.end(), chunk, chunk + n);
      if (!checked && buf.size() >= 8) {
        checked = true;
        std::span<const std::uint8_t> head(buf);
        wanted = is_elf(head) || is_fatbin(head) || starts_with(head, ar_magic);
        if (!wanted) break; // e.g. a linker script named libfoo.so
      }
    }
    if (!wanted) {
      archive_read_data_skip(a.get());
      continue;
    }
    std::span<const std::uint8_t> bytes(buf);
    if (!(is_elf(bytes) || is_fatbin(bytes) || starts_with(bytes, ar_magic))) continue;
    auto ks = read_kernels(bytes, fmt::format("{}!{}", path.string(), member));
    if (!ks) return std::unexpected(std::move(ks.error()));
    if (!ks->empty()) {
      for (auto& c : ks->containers) c.member = c.member.empty() ? member : fmt::format("{}({})", member, c.member);
      out.emplace_back(member, std::move(*ks));
    }
  }
  return out;
}

Expected<KernelSet> read_kernels_file(const std::filesystem::path& path, std::size_t window) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return make_error(ErrorCode::not_found, util::msg("{}: no such file", path.string()));
  if (path.extension() == ".whl") {
    auto members = ENVFIX_TRY(read_kernels_in_wheel(path));
    KernelSet ks;
    for (auto& [member, sub] : members) ks.append(std::move(sub));
    return ks;
  }
  auto map = ENVFIX_TRY(util::MappedFile::open(path));
  ReadOptions options;
  options.release = [&map](std::size_t off, std::size_t len) { map.drop(off, len); };
  options.window = window;
  return read_kernels(std::span<const std::uint8_t>(map.data(), map.size()), path.string(), options);
}

} // namespace envfix::wheel
