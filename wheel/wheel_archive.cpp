#include "wheel/wheel_archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <memory>
#include <system_error>

// ENVFIX_TRY for Expected<void>.
#define TRY_VOID(expr)                                                        \
  do {                                                                        \
    if (auto try_void_result_ = (expr); !try_void_result_)                    \
      return std::unexpected(std::move(try_void_result_).error());            \
  } while (0)

namespace envfix::wheel {

namespace {

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

std::string archive_message(struct archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

ArchiveEntry to_entry(struct archive_entry* e, std::size_t index) {
  ArchiveEntry out;
  out.index = index;
  const char* utf8 = archive_entry_pathname_utf8(e);
  const char* raw = archive_entry_pathname(e);
  out.name = utf8 ? utf8 : (raw ? raw : "");
  out.size_known = archive_entry_size_is_set(e) != 0;
  out.size = out.size_known && archive_entry_size(e) > 0
                 ? static_cast<std::uint64_t>(archive_entry_size(e)) : 0;
  out.mode = static_cast<unsigned>(archive_entry_perm(e)) & 07777u;
  if (const char* h = archive_entry_hardlink(e)) {
    out.type = ArchiveEntry::Type::hardlink;
    out.link_target = h;
    return out;
  }
  switch (archive_entry_filetype(e)) {
  case AE_IFREG: out.type = ArchiveEntry::Type::file; break;
  case AE_IFDIR: out.type = ArchiveEntry::Type::directory; break;
  case AE_IFLNK:
    out.type = ArchiveEntry::Type::symlink;
    if (const char* t = archive_entry_symlink(e)) out.link_target = t;
    break;
  default:
    // Names ending in '/' are directories whatever the attributes say.
    out.type = !out.name.empty() && out.name.back() == '/' ? ArchiveEntry::Type::directory
                                                            : ArchiveEntry::Type::other;
  }
  if (out.type == ArchiveEntry::Type::file && !out.name.empty() && out.name.back() == '/')
    out.type = ArchiveEntry::Type::directory;
  return out;
}

} // namespace

// Opens a fresh libarchive reader on the file or the memory buffer (libarchive readers are
// single-pass; each operation opens its own).
static Expected<ArchivePtr> open_reader(const std::filesystem::path& path,
                                        std::span<const std::uint8_t> bytes,
                                        const std::string& name) {
  ArchivePtr a(archive_read_new());
  if (!a) return fail(ErrorCode::internal, "libarchive: out of memory");
  // The seekable reader uses the central directory: it sees external attributes (modes) and
  // ZIP64 sizes, and is not fooled by local headers that disagree with it.
  archive_read_support_format_zip_seekable(a.get());
  archive_read_set_options(a.get(), "zip:hdrcharset=UTF-8");
  int rc = path.empty()
               ? archive_read_open_memory(a.get(), bytes.data(), bytes.size())
               : archive_read_open_filename(a.get(), path.c_str(), 1 << 16);
  if (rc != ARCHIVE_OK)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{}: not a readable ZIP archive: {}", name, archive_message(a.get())),
                      "a wheel is a ZIP file; re-download it");
  return a;
}

Expected<WheelArchive> WheelArchive::open(const std::filesystem::path& path, ArchiveLimits limits) {
  WheelArchive w;
  w.m_path = path;
  w.m_name = path.string();
  w.m_limits = limits;
  std::error_code ec;
  auto sz = std::filesystem::file_size(path, ec);
  if (ec) return fail(ErrorCode::not_found, "{}: {}", w.m_name, ec.message());
  w.m_archive_size = sz;
  TRY_VOID(w.list());
  return w;
}

Expected<WheelArchive> WheelArchive::open_memory(std::span<const std::uint8_t> bytes,
                                                 std::string name_for_errors, ArchiveLimits limits) {
  WheelArchive w;
  w.m_bytes = bytes;
  w.m_name = std::move(name_for_errors);
  w.m_limits = limits;
  w.m_archive_size = bytes.size();
  TRY_VOID(w.list());
  return w;
}

Expected<void> WheelArchive::list() {
  auto a = ENVFIX_TRY(open_reader(m_path, m_bytes, m_name));
  struct archive_entry* e = nullptr;
  m_total_size = 0;
  for (std::size_t i = 0;; ++i) {
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP directory at member {}: {}", m_name, i,
                  archive_message(a.get()));
    if (i >= m_limits.max_entries)
      return fail(ErrorCode::invalid_input, "{}: more than {} members", m_name, m_limits.max_entries);
    auto entry = to_entry(e, i);
    m_total_size += entry.size;
    if (m_total_size > m_limits.max_total_size)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("{}: uncompressed size exceeds the limit of {} bytes (at member '{}')",
                                    m_name, m_limits.max_total_size, entry.name),
                        "this looks like a zip bomb");
    m_entries.push_back(std::move(entry));
  }
  std::uint64_t base = std::max<std::uint64_t>(m_archive_size, 4096);
  if (m_total_size / base > m_limits.max_ratio)
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{}: compression ratio {}:1 exceeds the limit of {}:1 ({} bytes from {})",
                                  m_name, m_total_size / base, m_limits.max_ratio, m_total_size,
                                  m_archive_size),
                      "this looks like a zip bomb");
  return {};
}

const ArchiveEntry* WheelArchive::find(std::string_view member) const {
  for (const auto& e : m_entries)
    if (e.name == member) return &e;
  return nullptr;
}

Expected<std::string> WheelArchive::read_member(std::string_view member) const {
  std::string out;
  bool found = false;
  TRY_VOID(stream([&](const ArchiveEntry& e) -> Expected<std::optional<DataSink>> {
    if (found || e.name != member || e.type != ArchiveEntry::Type::file) return std::nullopt;
    found = true;
    return DataSink([&](std::string_view chunk) -> Expected<void> {
      if (out.size() + chunk.size() > m_limits.max_member_read)
        return fail(ErrorCode::invalid_input, "{}: member '{}' is larger than {} bytes", m_name,
                    member, m_limits.max_member_read);
      out.append(chunk);
      return {};
    });
  }));
  if (!found) return fail(ErrorCode::not_found, "{}: no member '{}'", m_name, member);
  return out;
}

Expected<void> WheelArchive::stream(const EntryVisitor& visit) const {
  auto a = ENVFIX_TRY(open_reader(m_path, m_bytes, m_name));
  struct archive_entry* e = nullptr;
  std::uint64_t total = 0;
  for (std::size_t i = 0;; ++i) {
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP member {}: {}", m_name, i,
                  archive_message(a.get()));
    auto entry = to_entry(e, i);
    auto sink = ENVFIX_TRY(visit(entry));
    if (!sink) {
      archive_read_data_skip(a.get());
      continue;
    }
    std::uint64_t produced = 0;
    char buf[1 << 16];
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
      if (n == 0) break;
      if (n < 0)
        return fail(ErrorCode::invalid_input, "{}: cannot decompress member '{}': {}", m_name,
                    entry.name, archive_message(a.get()));
      produced += static_cast<std::uint64_t>(n);
      total += static_cast<std::uint64_t>(n);
      if (entry.size_known && produced > entry.size)
        return fail(ErrorCode::invalid_input,
                    "{}: member '{}' decompresses to more than its declared {} bytes", m_name,
                    entry.name, entry.size);
      if (total > m_limits.max_total_size)
        return make_error(ErrorCode::invalid_input,
                          fmt::format("{}: uncompressed data exceeds {} bytes (at member '{}')", m_name,
                                      m_limits.max_total_size, entry.name),
                          "this looks like a zip bomb");
      TRY_VOID((*sink)(std::string_view(buf, static_cast<std::size_t>(n))));
    }
    if (entry.size_known && produced != entry.size)
      return fail(ErrorCode::invalid_input, "{}: member '{}' has {} bytes, the directory says {}",
                  m_name, entry.name, produced, entry.size);
  }
  return {};
}

} // namespace envfix::wheel
