#include "wheel/wheel_archive.hpp"

#include "util/fs.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
  out.size = out.size_known && archive_entry_size(e) > 0 ? static_cast<std::uint64_t>(archive_entry_size(e)) : 0;
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
    out.type = !out.name.empty() && out.name.back() == '/' ? ArchiveEntry::Type::directory : ArchiveEntry::Type::other;
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

// What a pass needs from one central-directory record, besides the name.
struct CentralRecord {
  std::uint64_t offset = 0;     // local header, corrected for data prepended to the archive
  std::uint64_t compressed = 0; // ZIP64 extra field applied
  std::uint64_t name_len = 0;
  std::size_t cd_index = 0; // position in the central directory
};

struct CentralDirectory {
  std::vector<std::string> names;     // directory order
  std::vector<CentralRecord> records; // directory order (filled when asked for)
  std::uint64_t start = 0;            // where the directory begins (members end there)
};

// Parses the end records and every central-directory record, bounds-checked. With `layout`,
// also reads each record's local-header offset and compressed size (ZIP64 extra field included).
Expected<CentralDirectory> parse_central_directory(std::span<const std::uint8_t> b, std::string_view where,
                                                   std::uint64_t max_entries, bool layout) {
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
  std::uint64_t cd_offset = le(b, eocd + 16, 4);
  std::uint64_t end_of_cd = eocd;
  if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
    if (eocd < 20 || le(b, eocd - 20, 4) != 0x07064b50) return bad("ZIP64 locator missing");
    std::uint64_t z64 = le(b, eocd - 20 + 8, 8);
    if (b.size() < 56 || z64 > b.size() - 56 || le(b, static_cast<std::size_t>(z64), 4) != 0x06064b50)
      return bad("ZIP64 end record out of range");
    count = le(b, static_cast<std::size_t>(z64) + 32, 8);
    cd_size = le(b, static_cast<std::size_t>(z64) + 40, 8);
    cd_offset = le(b, static_cast<std::size_t>(z64) + 48, 8);
    end_of_cd = z64;
  }
  if (cd_size > end_of_cd) return bad("central directory larger than the file");
  if (count > max_entries) return bad("too many members");
  CentralDirectory out;
  out.start = end_of_cd - cd_size;
  // Offsets count from the archive's first byte; data prepended to it (a self-extractor stub)
  // shifts them all by the same amount, as zipfile and libarchive allow.
  if (layout && cd_offset > out.start) return bad("central directory offset points past the directory");
  const std::uint64_t shift = layout ? out.start - cd_offset : 0;
  std::size_t pos = static_cast<std::size_t>(out.start);
  out.names.reserve(static_cast<std::size_t>(count));
  if (layout) out.records.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    if (pos + 46 > end_of_cd || le(b, pos, 4) != 0x02014b50) return bad("truncated central directory");
    std::size_t n = static_cast<std::size_t>(le(b, pos + 28, 2));
    std::size_t extra = static_cast<std::size_t>(le(b, pos + 30, 2));
    std::size_t comment = static_cast<std::size_t>(le(b, pos + 32, 2));
    if (pos + 46 + n + extra + comment > end_of_cd) return bad("central directory entry out of range");
    out.names.emplace_back(reinterpret_cast<const char*>(b.data() + pos + 46), n);
    if (layout) {
      CentralRecord r;
      r.cd_index = static_cast<std::size_t>(i);
      r.name_len = n;
      std::uint64_t uncompressed = le(b, pos + 24, 4);
      r.compressed = le(b, pos + 20, 4);
      r.offset = le(b, pos + 42, 4);
      // ZIP64 extended information: 8-byte values, in this order, for each field saturated above.
      if (uncompressed == 0xffffffff || r.compressed == 0xffffffff || r.offset == 0xffffffff) {
        std::size_t x = pos + 46 + n, x_end = x + extra;
        bool found = false;
        while (x + 4 <= x_end) {
          std::size_t id = static_cast<std::size_t>(le(b, x, 2));
          std::size_t len = static_cast<std::size_t>(le(b, x + 2, 2));
          if (x + 4 + len > x_end) break;
          if (id == 0x0001) {
            std::size_t f = x + 4, f_end = f + len;
            auto take = [&](std::uint64_t& v) {
              if (v != 0xffffffff) return true;
              if (f + 8 > f_end) return false;
              v = le(b, f, 8);
              f += 8;
              return true;
            };
            if (!take(uncompressed) || !take(r.compressed) || !take(r.offset))
              return bad(fmt::format("ZIP64 extra field of member {} is too short", i));
            found = true;
            break;
          }
          x += 4 + len;
        }
        if (!found) return bad(fmt::format("member {} needs a ZIP64 extra field and has none", i));
      }
      if (r.offset > out.start - shift) return bad(fmt::format("member {} starts past the central directory", i));
      r.offset += shift;
      out.records.push_back(r);
    }
    pos += 46 + n + extra + comment;
  }
  return out;
}

// A name libarchive decoded from a local header against the central directory's bytes: equal up
// to what libarchive itself normalizes (DOS backslashes, the '/' it appends to directories).
bool same_member_name(std::string_view decoded, std::string_view raw) {
  if (decoded.size() == raw.size() + 1 && decoded.back() == '/') decoded.remove_suffix(1);
  if (decoded.size() != raw.size()) return false;
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (decoded[i] != raw[i] && !(raw[i] == '\\' && decoded[i] == '/')) return false;
  return true;
}

// Local-header fields a pass checks: fixed part, then the name and extra lengths.
constexpr std::uint64_t local_header_size = 30;
// Bytes a reader may look at past the last member of its range: libarchive reads up to 24 bytes
// ahead when it looks for a data descriptor, and a ZIP always has a header or the directory there.
constexpr std::uint64_t descriptor_slack = 24;

} // namespace

Expected<std::vector<std::string>> zip_central_directory_names(std::span<const std::uint8_t> b, std::string_view where,
                                                               std::uint64_t max_entries) {
  auto cd = ENVFIX_TRY(parse_central_directory(b, where, max_entries, false));
  return std::move(cd.names);
}

// Opens a fresh libarchive reader on the file or the memory buffer (libarchive readers are
// single-pass; each operation opens its own).
static Expected<ArchivePtr> open_reader(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                                        const std::string& name) {
  ArchivePtr a(archive_read_new());
  if (!a) return fail(ErrorCode::internal, "libarchive: out of memory");
  // The seekable reader uses the central directory: it sees external attributes (modes) and
  // ZIP64 sizes, and is not fooled by local headers that disagree with it.
  archive_read_support_format_zip_seekable(a.get());
  archive_read_set_options(a.get(), "zip:hdrcharset=UTF-8");
  int rc = path.empty() ? archive_read_open_memory(a.get(), bytes.data(), bytes.size())
                        : archive_read_open_filename(a.get(), path.c_str(), 1 << 16);
  if (rc != ARCHIVE_OK)
    return make_error(ErrorCode::invalid_input, util::msg("{}: not a readable ZIP archive: {}", name, archive_message(a.get())),
                      util::msg("a wheel is a ZIP file; re-download it"));
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

Expected<WheelArchive> WheelArchive::open_memory(std::span<const std::uint8_t> bytes, std::string name_for_errors,
                                                 ArchiveLimits limits) {
  WheelArchive w;
  w.m_bytes = bytes;
  w.m_name = std::move(name_for_errors);
  w.m_limits = limits;
  w.m_archive_size = bytes.size();
  ENVFIX_TRY_VOID(w.list());
  return w;
}

Expected<void> WheelArchive::list() {
  CentralDirectory cd;
  if (m_path.empty()) {
    cd = ENVFIX_TRY(parse_central_directory(m_bytes, m_name, m_limits.max_entries, true));
  } else {
    auto map = ENVFIX_TRY(util::MappedFile::open(m_path));
    cd = ENVFIX_TRY(parse_central_directory({map.data(), map.size()}, m_name, m_limits.max_entries, true));
  }
  m_raw_names = std::move(cd.names);
  // Members in local-header order (the order libarchive's seekable reader returns them), each
  // owning the bytes up to the next one: two records sharing or overlapping bytes mean the
  // local and central headers lie about each other.
  auto& recs = cd.records;
  std::sort(recs.begin(), recs.end(), [](const CentralRecord& x, const CentralRecord& y) { return x.offset < y.offset; });
  m_offsets.clear();
  m_offsets.reserve(recs.size() + 1);
  for (std::size_t k = 0; k < recs.size(); ++k) {
    std::uint64_t limit = k + 1 < recs.size() ? recs[k + 1].offset : cd.start;
    const auto& name = m_raw_names[recs[k].cd_index];
    if (k + 1 < recs.size() && limit == recs[k].offset) {
      const auto& other = m_raw_names[recs[k + 1].cd_index];
      return make_error(ErrorCode::invalid_input,
                        name == other ? fmt::format("{}: duplicate member '{}' (two directory records share the "
                                                    "local header at offset {})",
                                                    m_name, name, limit)
                                      : fmt::format("{}: members '{}' and '{}' share one local header at offset {}", m_name, name,
                                                    other, limit),
                        "overlapping or lying local/central headers: the archive is corrupt or hostile");
    }
    if (recs[k].compressed > limit - recs[k].offset ||
        limit - recs[k].offset - recs[k].compressed < local_header_size + recs[k].name_len)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: member '{}' ({} bytes compressed at offset {}) overlaps {}", m_name, name,
                                  recs[k].compressed, recs[k].offset,
                                  k + 1 < recs.size()
                                      ? fmt::format("member '{}' at offset {}", m_raw_names[recs[k + 1].cd_index], limit)
                                      : fmt::format("the central directory at offset {}", limit)),
                        util::msg("overlapping or lying local/central headers: the archive is corrupt or hostile"));
    m_offsets.push_back(recs[k].offset);
  }
  m_offsets.push_back(cd.start);

  auto a = ENVFIX_TRY(open_reader(m_path, m_bytes, m_name));
  struct archive_entry* e = nullptr;
  m_total_size = 0;
  for (std::size_t i = 0;; ++i) {
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP directory at member {}: {}", m_name, i, archive_message(a.get()));
    auto raw = [&] { return i < recs.size() ? m_raw_names[recs[i].cd_index] : std::string("?"); };
    if (!archive_entry_pathname_utf8(e) && !archive_entry_pathname(e))
      return fail(ErrorCode::invalid_input, "{}: member {} ('{}') has a name that is not valid UTF-8", m_name, i, raw());
    if (i >= m_limits.max_entries)
      return fail(ErrorCode::invalid_input, "{}: more than {} members", m_name, m_limits.max_entries);
    auto entry = to_entry(e, i);
    // libarchive can hand back an empty name for one it could not convert; every such member
    // would alias every other (found by fuzzing).
    if (entry.name.empty())
      return fail(ErrorCode::invalid_input, "{}: member {} ('{}') has an empty or undecodable name", m_name, i, raw());
    // libarchive names the member from its local header; it must be the directory's record for
    // that offset (passes find member i by that offset and check the name again).
    if (i < recs.size() && !same_member_name(entry.name, raw()))
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: local header of member {} ('{}') disagrees with the central directory ('{}')", m_name, i,
                                  entry.name, raw()),
                        util::msg("overlapping or lying local/central headers: the archive is corrupt or hostile"));
    m_total_size += entry.size;
    if (m_total_size > m_limits.max_total_size)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: uncompressed size exceeds the limit of {} bytes (at member '{}')", m_name,
                                  m_limits.max_total_size, entry.name),
                        util::msg("this looks like a zip bomb"));
    m_entries.push_back(std::move(entry));
  }
  // Passes find member i at m_offsets[i]: that needs libarchive to have seen the same records.
  if (m_entries.size() != recs.size())
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("{}: the ZIP directory lists {} members, libarchive found {}", m_name, recs.size(), m_entries.size()),
        "overlapping or lying local/central headers: the archive is corrupt or hostile");
  std::uint64_t base = std::max<std::uint64_t>(m_archive_size, 4096);
  if (m_total_size / base > m_limits.max_ratio)
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: compression ratio {}:1 exceeds the limit of {}:1 ({} bytes from {})", m_name,
                                m_total_size / base, m_limits.max_ratio, m_total_size, m_archive_size),
                      util::msg("this looks like a zip bomb"));
  return {};
}

const ArchiveEntry* WheelArchive::find(std::string_view member) const {
  for (const auto& e : m_entries)
    if (e.name == member) return &e;
  return nullptr;
}

Expected<std::string> WheelArchive::read_member(std::string_view member) const {
  // The first regular file of that name, as a full pass would have found it.
  const ArchiveEntry* target = nullptr;
  for (const auto& e : m_entries)
    if (e.name == member && e.type == ArchiveEntry::Type::file) {
      target = &e;
      break;
    }
  if (!target) return fail(ErrorCode::not_found, "{}: no member '{}'", m_name, member);
  if (target->size_known && target->size > m_limits.max_member_read)
    return fail(ErrorCode::invalid_input, "{}: member '{}' is larger than {} bytes", m_name, member, m_limits.max_member_read);
  std::string out;
  ENVFIX_TRY_VOID(stream(
      [&](const ArchiveEntry&) -> Expected<std::optional<DataSink>> {
        return DataSink([&](std::string_view chunk) -> Expected<void> {
          if (out.size() + chunk.size() > m_limits.max_member_read)
            return fail(ErrorCode::invalid_input, "{}: member '{}' is larger than {} bytes", m_name, member,
                        m_limits.max_member_read);
          out.append(chunk);
          return {};
        });
      },
      target->index, target->index + 1));
  return out;
}

namespace {

// Serves one byte range of the archive (a file through pread, or memory) to a streaming reader.
struct RangeSource {
  int fd = -1;
  std::span<const std::uint8_t> bytes;
  std::uint64_t pos = 0, end = 0;
  std::unique_ptr<char[]> buf;
  static constexpr std::size_t block = 1 << 16;
};

la_ssize_t range_read(struct archive* a, void* data, const void** out) {
  auto* s = static_cast<RangeSource*>(data);
  *out = nullptr;
  if (s->pos >= s->end) return 0;
  if (s->fd < 0) {
    *out = s->bytes.data() + s->pos;
    auto n = s->end - s->pos;
    s->pos = s->end;
    return static_cast<la_ssize_t>(n);
  }
  auto want = static_cast<std::size_t>(std::min<std::uint64_t>(s->end - s->pos, RangeSource::block));
  ssize_t n = util::retry_eintr([&] { return ::pread(s->fd, s->buf.get(), want, static_cast<off_t>(s->pos)); });
  if (n < 0) {
    archive_set_error(a, errno, "read error: %s", std::strerror(errno));
    return ARCHIVE_FATAL;
  }
  s->pos += static_cast<std::uint64_t>(n);
  *out = s->buf.get();
  return n;
}

la_int64_t range_skip(struct archive*, void* data, la_int64_t request) {
  auto* s = static_cast<RangeSource*>(data);
  if (request <= 0) return 0;
  auto n = std::min<std::uint64_t>(static_cast<std::uint64_t>(request), s->end - s->pos);
  s->pos += n;
  return static_cast<la_int64_t>(n);
}

int range_close(struct archive*, void*) { return ARCHIVE_OK; }

// Decompresses the current member into `sink`, checking it against its declared size and the
// running total against the archive's limit (a zip bomb stops at the limit, not at the disk's end).
Expected<void> pump(struct archive* a, const ArchiveEntry& entry, const DataSink& sink, std::uint64_t& total,
                    const std::string& name, std::uint64_t max_total_size) {
  std::uint64_t produced = 0;
  char buf[1 << 16];
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0)
      return fail(ErrorCode::invalid_input, "{}: cannot decompress member '{}': {}", name, entry.name, archive_message(a));
    produced += static_cast<std::uint64_t>(n);
    total += static_cast<std::uint64_t>(n);
    if (entry.size_known && produced > entry.size)
      return fail(ErrorCode::invalid_input, "{}: member '{}' decompresses to more than its declared {} bytes", name, entry.name,
                  entry.size);
    if (total > max_total_size)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: uncompressed data exceeds {} bytes (at member '{}')", name, max_total_size, entry.name),
                        util::msg("this looks like a zip bomb"));
    ENVFIX_TRY_VOID(sink(std::string_view(buf, static_cast<std::size_t>(n))));
  }
  if (entry.size_known && produced != entry.size)
    return fail(ErrorCode::invalid_input, "{}: member '{}' has {} bytes, the directory says {}", name, entry.name, produced,
                entry.size);
  return {};
}

} // namespace

Expected<void> WheelArchive::stream(const EntryVisitor& visit, std::size_t begin, std::size_t end) const {
  end = std::min(end, m_entries.size());
  if (begin >= end) return {};
  RangeSource src;
  util::Fd file;
  if (!m_path.empty()) {
    file = util::Fd(::open(m_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file.valid()) return fail_errno(errno, ErrorCode::io, "{}: {}", m_name, std::strerror(errno));
    src.fd = file.get();
    src.buf = std::make_unique<char[]>(RangeSource::block);
  } else {
    src.bytes = m_bytes;
  }
  const std::uint64_t range_begin = m_offsets[begin];
  src.pos = range_begin;
  src.end = std::min(m_offsets[end] + descriptor_slack, m_archive_size);
  // A local header as stored, for the position check (the reader's input is the same bytes).
  auto local_header = [&](std::uint64_t off, std::uint8_t(&h)[local_header_size]) -> bool {
    if (off + local_header_size > m_archive_size) return false;
    if (src.fd < 0) {
      std::memcpy(h, m_bytes.data() + off, local_header_size);
      return true;
    }
    ssize_t n = util::retry_eintr([&] { return ::pread(src.fd, h, local_header_size, static_cast<off_t>(off)); });
    return n == static_cast<ssize_t>(local_header_size);
  };

  ArchivePtr a(archive_read_new());
  if (!a) return fail(ErrorCode::internal, "libarchive: out of memory");
  // The streaming reader holds one member at a time; the central directory was read by list().
  archive_read_support_format_zip_streamable(a.get());
  archive_read_set_options(a.get(), "zip:hdrcharset=UTF-8");
  if (archive_read_open2(a.get(), &src, nullptr, range_read, range_skip, range_close) != ARCHIVE_OK)
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: member {} ('{}'): no ZIP local header at offset {}: {}", m_name, begin,
                                m_entries[begin].name, range_begin, archive_message(a.get())),
                      util::msg("overlapping or lying local/central headers: the archive is corrupt or hostile"));

  struct archive_entry* e = nullptr;
  std::uint64_t total = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const ArchiveEntry& entry = m_entries[i];
    int rc = archive_read_next_header(a.get(), &e);
    if (rc == ARCHIVE_EOF)
      return fail(ErrorCode::invalid_input, "{}: member {} ('{}') has no local header", m_name, i, entry.name);
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return fail(ErrorCode::invalid_input, "{}: corrupt ZIP member {} ('{}'): {}", m_name, i, entry.name,
                  archive_message(a.get()));
    const char* utf8 = archive_entry_pathname_utf8(e);
    const char* raw = archive_entry_pathname(e);
    std::string_view local_name = utf8 ? utf8 : (raw ? raw : "");
    // The streaming reader does not know the directory's mode, so it may not append the '/'.
    bool dir_slash = entry.type == ArchiveEntry::Type::directory && local_name.size() + 1 == entry.name.size() &&
                     entry.name.starts_with(local_name);
    if (local_name != entry.name && !dir_slash)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: local header of member {} ('{}') disagrees with the central directory ('{}')", m_name, i,
                                  local_name, entry.name),
                        util::msg("overlapping or lying local/central headers: the archive is corrupt or hostile"));
    // The reader resynchronises on the next 'PK\3\4' it sees; make sure it parsed the header at
    // the directory's offset, not one hidden in the bytes before it.
    std::uint8_t h[local_header_size];
    bool at_offset = local_header(m_offsets[i], h) && le(h, 0, 4) == 0x04034b50;
    if (at_offset) {
      std::uint64_t header_end = m_offsets[i] + local_header_size + le(h, 26, 2) + le(h, 28, 2);
      auto consumed = range_begin + static_cast<std::uint64_t>(archive_filter_bytes(a.get(), 0));
      // A header that marks a symlink also takes the link target (at most 64 KiB) with it.
      bool link = archive_entry_filetype(e) == AE_IFLNK;
      at_offset = link ? consumed >= header_end && consumed - header_end <= (64u << 10) : consumed == header_end;
    }
    if (!at_offset)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: the local header of member {} ('{}') is not at offset {} where the "
                                  "central directory puts it",
                                  m_name, i, entry.name, m_offsets[i]),
                        util::msg("overlapping or lying local/central headers: the archive is corrupt or hostile"));
    auto sink = ENVFIX_TRY(visit(entry));
    // Only regular files have data; a symlink's target is in entry.link_target.
    if (!sink || entry.type != ArchiveEntry::Type::file) {
      if (i + 1 < end && archive_read_data_skip(a.get()) != ARCHIVE_OK)
        return fail(ErrorCode::invalid_input, "{}: cannot skip member '{}': {}", m_name, entry.name, archive_message(a.get()));
      continue;
    }
    ENVFIX_TRY_VOID(pump(a.get(), entry, *sink, total, m_name, m_limits.max_total_size));
  }
  return {};
}

} // namespace envfix::wheel
