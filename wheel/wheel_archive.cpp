#include "wheel/wheel_archive.hpp"

#include "util/fs.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <memory>
#include <system_error>

// ENVFIX_TRY for Expected<void>.
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

std::uint64_t le(std::span<const std::uint8_t> b, std::size_t off, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[off + static_cast<std::size_t>(i)];
  return v;
}

} // namespace

Expected<std::vector<std::string>> zip_central_directory_names(std::span<const std::uint8_t> b,
                                                               std::string_view where,
                                                               std::uint64_t max_entries) {
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::invalid_input, "{}: not a valid ZIP archive: {}", where, what);
  };
  if (b.size() < 22) return bad("too short");
  // End of central directory: the last signature within the comment's reach.
  std::size_t eocd = std::string_view::npos;
  std::size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (std::size_t i = b.size() - 22 + 1; i-- > lowest;)
    if (le(b, i, 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string_view::npos) return bad("no end-of-central-directory record");
  std::uint64_t count = le(b, eocd + 10, 2);
  std::uint64_t cd_size = le(b, eocd + 12, 4);
  std::uint64_t end_of_cd = eocd;
  if (count == 0xffff || cd_size == 0xffffffff || le(b, eocd + 16, 4) == 0xffffffff) {
    if (eocd < 20 || le(b, eocd - 20, 4) != 0x07064b50) return bad("ZIP64 locator missing");
    std::uint64_t z64 = le(b, eocd - 20 + 8, 8);
    if (z64 > b.size() - 56 || le(b, static_cast<std::size_t>(z64), 4) != 0x06064b50)
      return bad("ZIP64 end record out of range");
    count = le(b, static_cast<std::size_t>(z64) + 32, 8);
    cd_size = le(b, static_cast<std::size_t>(z64) + 40, 8);
    end_of_cd = z64;
  }
  if (cd_size > end_of_cd) return bad("central directory larger than the file");
  if (count > max_entries) return bad("too many members");
  std::size_t pos = static_cast<std::size_t>(end_of_cd - cd_size);
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    if (pos + 46 > end_of_cd || le(b, pos, 4) != 0x02014b50) return bad("truncated central directory");
    std::size_t n = static_cast<std::size_t>(le(b, pos + 28, 2));
    std::size_t extra = static_cast<std::size_t>(le(b, pos + 30, 2));
    std::size_t comment = static_cast<std::size_t>(le(b, pos + 32, 2));
    if (pos + 46 + n + extra + comment > end_of_cd) return bad("central directory entry out of range");
    names.emplace_back(reinterpret_cast<const char*>(b.data() + pos + 46), n);
    pos += 46 + n + extra + comment;
  }
  return names;
}

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
  ENVFIX_TRY_VOID(w.list());
  return w;
}

Expected<WheelArchive> WheelArchive::open_memory(std::span<const std::uint8_t> bytes,
                                                 std::string name_for_errors, ArchiveLimits limits) {
  WheelArchive w;
  w.m_bytes = bytes;
  w.m_name = std::move(name_for_errors);
  w.m_limits = limits;
  w.m_archive_size = bytes.size();
  ENVFIX_TRY_VOID(w.list());
  return w;
}

Expected<void> WheelArchive::list() {
  if (m_path.empty()) {
    m_raw_names = ENVFIX_TRY(zip_central_directory_names(m_bytes, m_name, m_limits.max_entries));
  } else {
    auto map = ENVFIX_TRY(util::MappedFile::open(m_path));
    m_raw_names = ENVFIX_TRY(zip_central_directory_names({map.data(), map.size()}, m_name, m_limits.max_entries));
  }
  auto a = ENVFIX_TRY(open_reader(m_path, m_bytes, m_name));
  struct archive_entry* e = nullptr;
  m_total_size = 0;
  for (std::size_t i = 0;; ++i) {
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP directory at member {}: {}", m_name, i,
                  archive_message(a.get()));
    if (!archive_entry_pathname_utf8(e) && !archive_entry_pathname(e))
      return fail(ErrorCode::invalid_input, "{}: member {} ('{}') has a name that is not valid UTF-8", m_name, i,
                  i < m_raw_names.size() ? m_raw_names[i] : std::string("?"));
    if (i >= m_limits.max_entries)
      return fail(ErrorCode::invalid_input, "{}: more than {} members", m_name, m_limits.max_entries);
    auto entry = to_entry(e, i);
    // libarchive can hand back an empty name for one it could not convert; every such member
    // would alias every other (found by fuzzing).
    if (entry.name.empty())
      return fail(ErrorCode::invalid_input, "{}: member {} ('{}') has an empty or undecodable name", m_name, i,
                  i < m_raw_names.size() ? m_raw_names[i] : std::string("?"));
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
  ENVFIX_TRY_VOID(stream([&](const ArchiveEntry& e) -> Expected<std::optional<DataSink>> {
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

Expected<void> WheelArchive::stream(const EntryVisitor& visit, std::size_t begin, std::size_t end) const {
  auto a = ENVFIX_TRY(open_reader(m_path, m_bytes, m_name));
  struct archive_entry* e = nullptr;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < end; ++i) {
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP member {}: {}", m_name, i,
                  archive_message(a.get()));
    if (i < begin) {
      archive_read_data_skip(a.get()); // the seekable reader seeks past it
      continue;
    }
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
      ENVFIX_TRY_VOID((*sink)(std::string_view(buf, static_cast<std::size_t>(n))));
    }
    if (entry.size_known && produced != entry.size)
      return fail(ErrorCode::invalid_input, "{}: member '{}' has {} bytes, the directory says {}",
                  m_name, entry.name, produced, entry.size);
  }
  return {};
}

} // namespace envfix::wheel
