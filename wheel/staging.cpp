#include "wheel/staging.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <system_error>

#include "specs/name.hpp"
#include "specs/rfc822.hpp"
#include "specs/version.hpp"
#include "specs/wheel_filename.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/writeback.hpp"
#include "wheel/record.hpp"
#include "wheel/wheel_info.hpp"

// ENVFIX_TRY for Expected<void>.
namespace envfix::wheel {

namespace fs = std::filesystem;

namespace {

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 4;
    if (n == 4) return false;
    if (n == 0) {
      ++i;
      continue;
    }
    if (i + n >= s.size()) return false;
    std::uint32_t cp = c & (0x3fu >> n);
    for (std::size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and out-of-range code points are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

// METADATA's first Name and Version, through the one RFC 822 reader (specs/rfc822.hpp).
struct NameVersion {
  std::string name, version;
};
Expected<NameVersion> metadata_name_version(std::string_view metadata, std::string_view name_for_errors) {
  auto block = ENVFIX_TRY(specs::read_headers(metadata, name_for_errors));
  NameVersion out;
  if (auto* h = block.find("Name")) out.name = h->value;
  if (auto* h = block.find("Version")) out.version = h->value;
  return out;
}

// PEP 440 equality (specs::Version), so "1.0" and "1.0.0" or "v1.0" agree; text that is no version
// never equals anything.
bool same_version(std::string_view text, const specs::Version& v) {
  auto parsed = specs::Version::parse(text);
  return parsed && *parsed == v;
}

} // namespace

std::string record_hash(std::string_view bytes) {
  util::Sha256 h;
  h.update(bytes);
  return "sha256=" + util::base64url_nopad(h.raw_digest());
}

Expected<std::string> record_hash_file(const fs::path& path) {
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    return with_errno(fail(ErrorCode::io, "cannot read {}: {}", path.string(), std::strerror(err)), err);
  }
  util::Sha256 h;
  char buf[1 << 16];
  for (;;) {
    auto n = util::retry_eintr([&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0) {
      int err = errno;
      return with_errno(fail(ErrorCode::io, "cannot read {}: {}", path.string(), std::strerror(err)), err);
    }
    if (n == 0) break;
    h.update(buf, static_cast<std::size_t>(n));
  }
  return "sha256=" + util::base64url_nopad(h.raw_digest());
}

Expected<void> check_member_name(std::string_view name) {
  if (name.empty()) return fail(ErrorCode::invalid_input, "empty member name");
  if (!valid_utf8(name))
    return fail(ErrorCode::invalid_input, "member name is not valid UTF-8: '{}'", util::escape_control(name));
  if (name.find('\\') != std::string_view::npos) return fail(ErrorCode::invalid_input, "member '{}' contains a backslash", name);
  if (name.find('\0') != std::string_view::npos) return fail(ErrorCode::invalid_input, "member name contains a NUL byte");
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return fail(ErrorCode::invalid_input, "member '{}' contains a control character", util::escape_control(name));
  if (name[0] == '/') return fail(ErrorCode::invalid_input, "member '{}' is an absolute path", name);
  if (name.size() >= 2 && name[1] == ':') return fail(ErrorCode::invalid_input, "member '{}' is an absolute (drive) path", name);
  std::string_view rest = name;
  if (rest.back() == '/') rest.remove_suffix(1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    auto slash = rest.find('/', start);
    auto comp = rest.substr(start, slash == std::string_view::npos ? rest.size() - start : slash - start);
    if (comp == "..") return fail(ErrorCode::invalid_input, "member '{}' has a '..' component (would escape the target)", name);
    if (comp.empty() || comp == ".")
      return fail(ErrorCode::invalid_input, "member '{}' has an empty or '.' path component", name);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

std::vector<const StagedFile*> StagedWheel::shared_objects() const {
  std::vector<const StagedFile*> out;
  for (const auto& f : files) {
    auto slash = f.staged.rfind('/');
    std::string_view base =
        slash == std::string::npos ? std::string_view(f.staged) : std::string_view(f.staged).substr(slash + 1);
    if (base.size() > 3 && (base.ends_with(".so") || base.find(".so.") != std::string::npos)) out.push_back(&f);
  }
  return out;
}

namespace {

// validate (1): the member names as stored (libarchive normalizes some of them away) and as read:
// each name allowed and unique, only regular files and directories.
Expected<void> check_members(const WheelArchive& ar, const std::string& wname) {
  std::set<std::string> seen;
  for (const auto& raw : ar.raw_names()) {
    if (auto ok = check_member_name(raw); !ok)
      return std::unexpected(std::move(ok.error()).context(util::msg("{}: refusing the wheel", wname)));
    std::string key = raw;
    if (key.back() == '/') key.pop_back();
    if (!seen.insert(key).second) return fail(ErrorCode::invalid_input, "{}: duplicate member '{}'", wname, raw);
  }
  if (ar.raw_names().size() != ar.entries().size())
    return fail(ErrorCode::invalid_input, "{}: the ZIP directory lists {} members, the reader found {}", wname,
                ar.raw_names().size(), ar.entries().size());
  for (const auto& e : ar.entries()) {
    std::string key = e.name;
    if (!key.empty() && key.back() == '/') key.pop_back();
    if (!seen.contains(key))
      return fail(ErrorCode::invalid_input, "{}: member '{}' is not in the ZIP directory as named", wname, e.name);
    switch (e.type) {
    case ArchiveEntry::Type::symlink:
      return fail(ErrorCode::invalid_input, "{}: member '{}' is a symbolic link (to '{}'); wheels may only contain regular files",
                  wname, e.name, e.link_target);
    case ArchiveEntry::Type::hardlink:
      return fail(ErrorCode::invalid_input, "{}: member '{}' is a hard link (to '{}'); wheels may only contain regular files",
                  wname, e.name, e.link_target);
    case ArchiveEntry::Type::other: return fail(ErrorCode::invalid_input, "{}: member '{}' is not a regular file", wname, e.name);
    default: break;
    }
  }
  return {};
}

// validate (2): exactly one top-level .dist-info, a .data directory only of the same stem, and
// METADATA, WHEEL and RECORD inside it. Sets sw.dist_info and sw.data_dir.
Expected<void> find_dist_info(const WheelArchive& ar, const std::string& wname, StagedWheel& sw) {
  std::set<std::string> dist_infos, data_dirs;
  for (const auto& e : ar.entries()) {
    std::string key = e.name;
    if (!key.empty() && key.back() == '/') key.pop_back();
    auto top = key.substr(0, key.find('/'));
    bool is_dir_child = key.find('/') != std::string::npos || e.type == ArchiveEntry::Type::directory;
    if (is_dir_child && top.ends_with(".dist-info")) dist_infos.insert(top);
    if (is_dir_child && top.ends_with(".data")) data_dirs.insert(top);
  }
  if (dist_infos.size() != 1)
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: expected exactly one top-level .dist-info directory, found {}", wname, dist_infos.size()),
                      util::msg("the file is not a valid wheel"));
  sw.dist_info = *dist_infos.begin();
  std::string stem = sw.dist_info.substr(0, sw.dist_info.size() - std::string_view(".dist-info").size());
  sw.data_dir = stem + ".data";
  for (const auto& d : data_dirs)
    if (d != sw.data_dir)
      return fail(ErrorCode::invalid_input, "{}: data directory '{}' does not match the dist-info '{}'", wname, d, sw.dist_info);
  for (const char* required : {"METADATA", "WHEEL", "RECORD"})
    if (!ar.find(sw.dist_info + "/" + required))
      return fail(ErrorCode::invalid_input, "{}: {}/{} is missing", wname, sw.dist_info, required);
  return {};
}

// validate (3): WHEEL (refuse a Wheel-Version major above 1, PEP 427), and METADATA's name and
// version, which must agree with the file name and the dist-info folder (PEP 440 equality).
Expected<void> check_wheel_and_metadata(const WheelArchive& ar, const std::string& wname, const specs::WheelFilename& fn,
                                        StagedWheel& sw) {
  auto wheel_text = ENVFIX_TRY(ar.read_member(sw.dist_info + "/WHEEL"));
  auto info = ENVFIX_TRY(WheelInfo::parse(wheel_text, wname + ":" + sw.dist_info + "/WHEEL"));
  sw.wheel_version = fmt::format("{}.{}", info.version_major, info.version_minor);
  if (info.version_major > WheelInfo::supported_major)
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: Wheel-Version {} is not supported (this installer reads 1.x)", wname, sw.wheel_version),
                      util::msg("upgrade envfix, or pick an older build of the package"));
  if (info.newer_minor) sw.warnings.push_back(fmt::format("{}: Wheel-Version {} is newer than 1.0", wname, sw.wheel_version));
  sw.root_is_purelib = info.root_is_purelib;

  sw.metadata = ENVFIX_TRY(ar.read_member(sw.dist_info + "/METADATA"));
  auto md = ENVFIX_TRY(metadata_name_version(sw.metadata, wname + ":" + sw.dist_info + "/METADATA"));
  sw.name = std::move(md.name);
  sw.version = std::move(md.version);
  if (sw.name.empty() || sw.version.empty())
    return fail(ErrorCode::invalid_input, "{}: {}/METADATA lacks Name or Version", wname, sw.dist_info);
  if (specs::normalize_name(sw.name) != fn.normalized_name() || !same_version(sw.version, fn.version))
    return fail(ErrorCode::invalid_input, "{}: METADATA says {} {}, the file name says {} {}", wname, sw.name, sw.version,
                fn.name, fn.version.to_string());
  const std::string stem = sw.dist_info.substr(0, sw.dist_info.size() - std::string_view(".dist-info").size());
  bool stem_ok = false;
  for (std::size_t dash = stem.find('-'); dash != std::string::npos; dash = stem.find('-', dash + 1))
    stem_ok = stem_ok || (specs::normalize_name(stem.substr(0, dash)) == specs::normalize_name(sw.name) &&
                          same_version(stem.substr(dash + 1), fn.version));
  if (!stem_ok)
    return fail(ErrorCode::invalid_input, "{}: dist-info '{}' does not match {} {}", wname, sw.dist_info, sw.name, sw.version);
  return {};
}

// validate (4): RECORD lists every member and every listed file exists (PEP 427, ".dist-info
// directory"); .data members sit under a known scheme key; sizes agree with the archive.
Expected<void> check_record(const WheelArchive& ar, const std::string& wname, const StagingOptions& opt, StagedWheel& sw,
                            std::map<std::string, RecordEntry>& record_out) {
  const std::string record_name = sw.dist_info + "/RECORD";
  auto record_text = ENVFIX_TRY(ar.read_member(record_name));
  auto parsed = ENVFIX_TRY(Record::parse(record_text, wname + ":" + record_name));
  for (auto& r : parsed.entries) {
    if (record_out.contains(r.path)) return fail(ErrorCode::invalid_input, "{}: RECORD lists '{}' twice", wname, r.path);
    record_out.emplace(r.path, r);
  }
  auto is_signature = [&](const std::string& m) {
    return m == record_name || m == record_name + ".jws" || m == record_name + ".p7s";
  };
  for (const auto& e : ar.entries()) {
    if (e.type != ArchiveEntry::Type::file || is_signature(e.name)) continue;
    // .data keys (PEP 427: purelib, platlib, headers, scripts, data).
    if (e.name.starts_with(sw.data_dir + "/")) {
      auto rest = std::string_view(e.name).substr(sw.data_dir.size() + 1);
      auto key = rest.substr(0, rest.find('/'));
      if (rest.find('/') == std::string_view::npos)
        return fail(ErrorCode::invalid_input, "{}: member '{}' sits directly in the .data directory", wname, e.name);
      if (key != "purelib" && key != "platlib" && key != "scripts" && key != "data" && key != "headers")
        return make_error(ErrorCode::invalid_input, util::msg("{}: unknown .data scheme '{}' in member '{}'", wname, key, e.name),
                          util::msg("known keys are purelib, platlib, scripts, data, headers"));
    }
    auto it = record_out.find(e.name);
    if (it == record_out.end()) {
      if (opt.strict_record)
        return make_error(ErrorCode::invalid_input, util::msg("{}: member '{}' is not listed in RECORD", wname, e.name),
                          util::msg("the wheel was modified after it was built; rebuild or re-download it"));
      sw.warnings.push_back(fmt::format("{}: member '{}' is not listed in RECORD", wname, e.name));
      continue;
    }
    const auto& algo = it->second.hash_algo;
    if (algo.empty()) {
      if (opt.strict_record) return fail(ErrorCode::invalid_input, "{}: RECORD has no hash for '{}'", wname, e.name);
      sw.warnings.push_back(fmt::format("{}: RECORD has no hash for '{}'", wname, e.name));
    } else if (algo != "sha256" && algo != "sha384" && algo != "sha512") {
      return fail(ErrorCode::invalid_input, "{}: RECORD hash of '{}' uses a forbidden or unknown algorithm '{}'", wname, e.name,
                  algo);
    } else if (algo != "sha256") {
      sw.warnings.push_back(fmt::format("{}: cannot check the {} hash of '{}'", wname, algo, e.name));
    }
    if (it->second.size && e.size_known && *it->second.size != e.size)
      return fail(ErrorCode::invalid_input, "{}: RECORD says '{}' has {} bytes, the archive has {}", wname, e.name,
                  *it->second.size, e.size);
  }
  for (const auto& [path, row] : record_out) {
    if (is_signature(path)) continue;
    auto* e = ar.find(path);
    if (!e || e->type != ArchiveEntry::Type::file)
      return fail(ErrorCode::invalid_input, "{}: RECORD lists '{}' but the archive has no such file", wname, path);
  }
  return {};
}

// All checks that need only the directory and the small metadata members (nothing written yet).
Expected<StagedWheel> validate(const WheelArchive& ar, const fs::path& wheel, const StagingOptions& opt,
                               std::map<std::string, RecordEntry>& record_out) {
  const std::string wname = wheel.filename().string();
  auto fn = specs::WheelFilename::parse(wname);
  if (!fn) return std::unexpected(std::move(fn.error()).context(util::msg("{}: not a wheel file name", wname)));
  StagedWheel sw;
  sw.wheel = wheel;
  ENVFIX_TRY_VOID(check_members(ar, wname));
  ENVFIX_TRY_VOID(find_dist_info(ar, wname, sw));
  ENVFIX_TRY_VOID(check_wheel_and_metadata(ar, wname, *fn, sw));
  if (auto* ep = ar.find(sw.dist_info + "/entry_points.txt"); ep && ep->type == ArchiveEntry::Type::file)
    sw.entry_points = ENVFIX_TRY(ar.read_member(ep->name));
  ENVFIX_TRY_VOID(check_record(ar, wname, opt, sw, record_out));
  return sw;
}

} // namespace

// ---- WheelStager ----------------------------------------------------------------------------

struct WheelStager::Impl {
  WheelArchive archive;
  StagingOptions options;
  StagedWheel sw;
  std::map<std::string, RecordEntry> record;
  std::string wname;
  unsigned umask_bits = 022;
  // Per archive entry: the slot in sw.files it fills, -1 for RECORD and its signatures (written,
  // not hashed), -2 for entries that are not regular files.
  std::vector<long> slot_of_entry;
  std::vector<std::string> digests;     // per sw.files slot, raw sha256
  std::vector<std::uint64_t> written;   // per sw.files slot
  std::vector<std::size_t> group_start; // entry index where each group of the current split begins
  bool finished = false;

  explicit Impl(WheelArchive a) : archive(std::move(a)) {}
};

WheelStager::WheelStager(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
WheelStager::WheelStager(WheelStager&&) noexcept = default;
WheelStager& WheelStager::operator=(WheelStager&&) noexcept = default;
WheelStager::~WheelStager() {
  if (m_impl && !m_impl->finished && !m_impl->sw.tree.empty()) {
    std::error_code e;
    fs::remove_all(m_impl->sw.tree, e);
  }
}

Expected<WheelStager> WheelStager::prepare(const fs::path& wheel, const fs::path& staging_dir, const StagingOptions& opt) {
  auto ar = ENVFIX_TRY(WheelArchive::open(wheel, opt.limits));
  auto impl = std::make_unique<Impl>(std::move(ar));
  impl->options = opt;
  impl->sw = ENVFIX_TRY(validate(impl->archive, wheel, opt, impl->record));
  impl->wname = wheel.filename().string();
  impl->sw.archive_size = impl->archive.archive_size();

  std::error_code ec;
  if (fs::exists(staging_dir, ec) && !fs::is_empty(staging_dir, ec))
    return fail(ErrorCode::io, "staging directory {} is not empty", staging_dir.string());
  ENVFIX_TRY_VOID(util::create_directories(staging_dir));
  WheelStager stager(std::move(impl));
  auto& m = *stager.m_impl;
  m.sw.tree = fs::absolute(staging_dir); // from here on the destructor removes it on failure

  if (opt.fault) ENVFIX_TRY_VOID(opt.fault("unpack"));
  m.umask_bits = util::current_umask();
  const std::string record_name = m.sw.dist_info + "/RECORD";
  // Every directory up front, so that concurrent groups only create files.
  std::set<std::string> dirs;
  for (const auto& e : m.archive.entries()) {
    if (e.type != ArchiveEntry::Type::file) {
      m.slot_of_entry.push_back(-2);
      continue;
    }
    std::string dest = (m.sw.tree / e.name).string();
    auto parent = dest.substr(0, dest.rfind('/'));
    if (dirs.insert(parent).second) ENVFIX_TRY_VOID(util::create_directories(parent));
    bool is_record = e.name == record_name || e.name == record_name + ".jws" || e.name == record_name + ".p7s";
    if (is_record) {
      m.slot_of_entry.push_back(-1);
      continue;
    }
    m.slot_of_entry.push_back(static_cast<long>(m.sw.files.size()));
    m.sw.files.push_back({e.name, std::move(dest), "", 0, (e.mode & 0111) != 0});
  }
  m.digests.resize(m.sw.files.size());
  m.written.resize(m.sw.files.size());
  return stager;
}

std::uint64_t WheelStager::payload_bytes() const { return m_impl->archive.total_size(); }
const std::string& WheelStager::filename() const { return m_impl->wname; }

std::size_t WheelStager::split(std::size_t max_groups, std::uint64_t min_group_bytes) {
  const auto& entries = m_impl->archive.entries();
  std::uint64_t total = 0;
  for (const auto& e : entries) total += e.size;
  std::size_t groups =
      std::max<std::size_t>(1, std::min<std::size_t>(max_groups, min_group_bytes ? total / min_group_bytes : max_groups));
  // Contiguous ranges of about equal uncompressed size keep each reader's access sequential.
  auto& starts = m_impl->group_start;
  starts.assign(1, 0);
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < entries.size() && starts.size() < groups; ++i) {
    acc += entries[i].size;
    if (acc * groups >= total * starts.size() && i + 1 < entries.size()) starts.push_back(i + 1);
  }
  return starts.size();
}

Expected<void> WheelStager::extract(std::size_t group) {
  auto& m = *m_impl;
  if (m.group_start.empty()) m.group_start.assign(1, 0);
  if (group >= m.group_start.size())
    return fail(ErrorCode::internal, "{}: extract group {} of {}", m.wname, group, m.group_start.size());
  std::size_t begin = m.group_start[group];
  std::size_t end = group + 1 < m.group_start.size() ? m.group_start[group + 1] : m.archive.entries().size();
  const std::string& wname = m.wname;
  const unsigned umask_bits = m.umask_bits;
  auto result = m.archive.stream(
      [&](const ArchiveEntry& e) -> Expected<std::optional<DataSink>> {
        if (e.index >= m.slot_of_entry.size() || m.slot_of_entry[e.index] == -2) return std::nullopt;
        long slot = m.slot_of_entry[e.index];
        fs::path dest = m.sw.tree / e.name;
        bool exec = (e.mode & 0111) != 0;
        int fd = ::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, exec ? 0777 : 0666);
        if (fd < 0) {
          int err = errno;
          return with_errno(make_error(ErrorCode::io,
                                       fmt::format("{}: cannot create {}: {}", wname, dest.string(), std::strerror(err)),
                                       err == ENOSPC || err == EDQUOT ? "the disk is full; free space and retry" : ""),
                            err);
        }
        if (exec) ::fchmod(fd, (0777 & ~umask_bits) | 0111);
        auto file = std::make_shared<util::Fd>(fd);
        std::shared_ptr<util::Sha256> hasher;
        if (slot >= 0) hasher = std::make_shared<util::Sha256>();
        auto bytes = std::make_shared<std::uint64_t>(0);
        auto writeback = std::make_shared<util::WritebackPacer>();
        // The digest lands in its slot when the sink is destroyed after the member's last chunk.
        struct Finish {
          Impl* m;
          long slot;
          std::shared_ptr<util::Sha256> hasher;
          std::shared_ptr<std::uint64_t> bytes;
          std::shared_ptr<util::Fd> file;
          std::shared_ptr<util::WritebackPacer> writeback;
          ~Finish() {
            writeback->finish(file->get(), *bytes);
            if (slot >= 0 && hasher) {
              m->digests[static_cast<std::size_t>(slot)] = hasher->raw_digest();
              m->written[static_cast<std::size_t>(slot)] = *bytes;
            }
          }
        };
        auto finish = std::make_shared<Finish>(Finish{&m, slot, hasher, bytes, file, writeback});
        return DataSink([=](std::string_view chunk) -> Expected<void> {
          (void)finish;
          if (hasher) hasher->update(chunk);
          *bytes += chunk.size();
          if (int err = util::write_all(file->get(), chunk); err != 0)
            return with_errno(make_error(ErrorCode::io,
                                         fmt::format("{}: writing {}: {}", wname, dest.string(), std::strerror(err)),
                                         err == ENOSPC || err == EDQUOT || err == EFBIG
                                             ? "the disk is full (or the file size limit was reached); free space and retry"
                                             : ""),
                              err);
          writeback->wrote(file->get(), *bytes);
          return {};
        });
      },
      begin, end);
  if (!result) return std::unexpected(std::move(result.error()).context(util::msg("unpacking {}", wname)));
  return {};
}

Expected<StagedWheel> WheelStager::finish() {
  auto& m = *m_impl;
  const std::string& wname = m.wname;
  auto& sw = m.sw;
  // Hash check (PEP 427, ".dist-info directory"): digests were computed over exactly the bytes
  // written to disk. A member the passes never reached (empty members have no data callback) hashes as empty.
  for (std::size_t i = 0; i < sw.files.size(); ++i) {
    auto& f = sw.files[i];
    if (m.digests[i].empty()) m.digests[i] = util::Sha256().raw_digest();
    f.hash = "sha256=" + util::base64url_nopad(m.digests[i]);
    f.size = m.written[i];
    auto it = m.record.find(f.member);
    if (it != m.record.end() && it->second.hash_algo == "sha256" && it->second.hash_field() != f.hash) {
      auto err = make_error(ErrorCode::hash_mismatch,
                            util::msg("{}: '{}' does not match its RECORD hash (RECORD {}, file {})", wname, f.member,
                                      it->second.hash_field(), f.hash),
                            util::msg("the wheel is corrupt or was tampered with; re-download it"));
      if (m.options.strict_record) return err;
      sw.warnings.push_back(err.error().message);
    }
    if (it != m.record.end() && it->second.size && *it->second.size != f.size)
      return fail(ErrorCode::hash_mismatch, "{}: '{}' has {} bytes, RECORD says {}", wname, f.member, f.size, *it->second.size);
    if (m.options.fault) ENVFIX_TRY_VOID(m.options.fault("hash"));
  }
  m.finished = true;
  // Moved out: the stager is spent, and a copy would hold the file list twice.
  return std::move(sw);
}

Expected<StagedWheel> stage_wheel(const fs::path& wheel, const fs::path& staging_dir, const StagingOptions& opt) {
  auto stager = ENVFIX_TRY(WheelStager::prepare(wheel, staging_dir, opt));
  // Groups of at least 8 MiB: below that a second reader costs more than it saves.
  std::size_t groups = stager.split(std::max(1u, opt.threads), 8ull << 20);
  ENVFIX_TRY_VOID(util::parallel_for(groups, opt.threads, [&](std::size_t g) { return stager.extract(g); }));
  return stager.finish();
}

} // namespace envfix::wheel
