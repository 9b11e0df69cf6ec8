#include "installer/unpacked_cache.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/cache_trust.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* to_string(LinkMode mode) {
  switch (mode) {
  case LinkMode::automatic: return "auto";
  case LinkMode::clone: return "clone";
  case LinkMode::hardlink: return "hardlink";
  case LinkMode::copy: return "copy";
  }
  return "?";
}

Expected<LinkMode> parse_link_mode(std::string_view text) {
  if (text == "auto") return LinkMode::automatic;
  if (text == "clone") return LinkMode::clone;
  if (text == "hardlink") return LinkMode::hardlink;
  if (text == "copy") return LinkMode::copy;
  return make_error(ErrorCode::invalid_input, util::msg("unknown link mode '{}'", text),
                    util::msg("use one of auto, clone, hardlink, copy"));
}

namespace {

constexpr const char* manifest_name = "manifest.json";
// 2: every file also records its inode and change time (docs/installing.md, "the unpacked cache").
constexpr int manifest_version = 2;

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::int64_t ctime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
}

// The manifest is input like an archive: its names pass staging's rules before any path is built
// from them (one component for the file and the dist-info, wheel::check_member_name for members).
bool one_component(std::string_view s) {
  return !s.empty() && s.find('/') == std::string_view::npos && s != "." && s != ".." && wheel::check_member_name(s).has_value();
}

bool valid_manifest_names(const wheel::StagedWheel& sw, std::string_view filename) {
  constexpr std::string_view di = ".dist-info";
  if (!one_component(filename) || !filename.ends_with(".whl") || !one_component(sw.dist_info) || !sw.dist_info.ends_with(di) ||
      sw.dist_info.size() == di.size())
    return false;
  return sw.data_dir == sw.dist_info.substr(0, sw.dist_info.size() - di.size()) + ".data";
}

bool valid_sha256(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

// ---- linking one file ---------------------------------------------------------------------------

// errno values that mean "this filesystem (pair) cannot do that", as opposed to a real failure.
bool unsupported(int err, LinkMode mode) {
  if (mode == LinkMode::clone)
    return err == EOPNOTSUPP || err == EINVAL || err == EXDEV || err == ENOTTY || err == ENOSYS || err == EPERM;
  if (mode == LinkMode::hardlink) return err == EXDEV || err == EPERM || err == EMLINK || err == EOPNOTSUPP;
  return false;
}

// Returns 0 or the errno of the failing call; `dest` does not exist afterwards on failure.
int clone_file(const std::string& src, const std::string& dest, mode_t mode) {
  util::Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return errno;
  util::Fd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!out.valid()) return errno;
  if (::ioctl(out.get(), FICLONE, in.get()) != 0) {
    int err = errno;
    ::unlink(dest.c_str());
    return err;
  }
  ::fchmod(out.get(), mode);
  return 0;
}

int link_one(LinkMode mode, const std::string& src, const std::string& dest, mode_t file_mode) {
  switch (mode) {
  case LinkMode::clone: return clone_file(src, dest, file_mode);
  case LinkMode::hardlink: return ::link(src.c_str(), dest.c_str()) == 0 ? 0 : errno;
  default: return util::copy_file_exclusive(src, dest, file_mode);
  }
}

// Rewrites the manifest of the entry at `entry` with new change times (member → inode, change time)
// for the files whose recorded inode is that one. Best effort and not fsync'd, like add(): a lost
// or stale update costs one re-hash, never trust. Written to a temp file and renamed, so that a
// concurrent find() reads the old or the new manifest, never a torn one.
void refresh_manifest(const fs::path& entry,
                      const std::unordered_map<std::string, std::pair<std::uint64_t, std::int64_t>>& changed) {
  if (changed.empty()) return;
  const fs::path manifest = entry / manifest_name;
  auto text = util::read_file(manifest);
  if (!text) return;
  std::string out;
  try {
    auto j = json::parse(*text);
    if (j.value("manifest", 0) != manifest_version) return;
    for (auto& f : j.at("files")) {
      auto it = changed.find(f.at(0).get_ref<const std::string&>());
      if (it != changed.end() && f.at(6).get<std::uint64_t>() == it->second.first) f.at(5) = it->second.second;
    }
    out = j.dump();
  } catch (const std::exception&) {
    return;
  }
  const fs::path temp = entry / (std::string(manifest_name) + ".tmp-" + random_suffix());
  util::Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return;
  const bool written = ::write(fd.get(), out.data(), out.size()) == static_cast<ssize_t>(out.size());
  if (!written || ::rename(temp.c_str(), manifest.c_str()) != 0) ::unlink(temp.c_str());
}

} // namespace

// ---- the manifest, with checked types ---------------------------------------------------------------

namespace {

Error bad_manifest(const fs::path& path, const util::Message& what) {
  return Error::made(ErrorCode::invalid_input, util::msg("{}: damaged unpacked-cache manifest: {}", path.string(), what), {},
                     util::msg("the entry is ignored and the wheel unpacked again"));
}

template <class T>
bool typed(const json& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return v.is_string();
  else if constexpr (std::is_same_v<T, bool>)
    return v.is_boolean();
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return v.is_number_unsigned();
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return v.is_number_integer();
  else
    return false;
}

template <class T>
Expected<T> field(const json& j, const char* key, const fs::path& path) {
  auto it = j.find(key);
  if (it == j.end() || !typed<T>(*it))
    return std::unexpected(bad_manifest(path, util::msg("\"{}\" missing or of the wrong type", key)));
  return it->get<T>();
}

template <class T>
Expected<T> element(const json& a, std::size_t i, const fs::path& path, std::size_t file) {
  if (i >= a.size() || !typed<T>(a[i]))
    return std::unexpected(bad_manifest(path, util::msg("files[{}][{}] missing or of the wrong type", file, i)));
  return a[i].get<T>();
}

Expected<std::vector<std::string>> strings(const json& v, const fs::path& path, std::string_view what) {
  if (!v.is_array()) return std::unexpected(bad_manifest(path, util::msg("{} is not a list", what)));
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) return std::unexpected(bad_manifest(path, util::msg("{} holds a non-string", what)));
    out.push_back(e.get<std::string>());
  }
  return out;
}

Expected<ManifestFile> parse_file(const json& f, const fs::path& path, std::size_t k) {
  if (!f.is_array()) return std::unexpected(bad_manifest(path, util::msg("files[{}] is not a list", k)));
  ManifestFile mf;
  mf.member = ENVFIX_TRY(element<std::string>(f, 0, path, k));
  mf.hash = ENVFIX_TRY(element<std::string>(f, 1, path, k));
  mf.size = ENVFIX_TRY(element<std::uint64_t>(f, 2, path, k));
  mf.executable = ENVFIX_TRY(element<bool>(f, 3, path, k));
  mf.mtime = ENVFIX_TRY(element<std::int64_t>(f, 4, path, k));
  mf.ctime = ENVFIX_TRY(element<std::int64_t>(f, 5, path, k));
  mf.ino = ENVFIX_TRY(element<std::uint64_t>(f, 6, path, k));
  if (f.size() > 7) mf.pieces = ENVFIX_TRY(strings(f[7], path, fmt::format("files[{}][7]", k)));
  return mf;
}

} // namespace

Expected<UnpackedManifest> parse_manifest(std::string_view text, const fs::path& path) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::unexpected(bad_manifest(path, util::msg("not JSON")));
  if (!j.is_object()) return std::unexpected(bad_manifest(path, util::msg("not a JSON object")));
  UnpackedManifest m;
  auto v = j.find("manifest");
  if (v == j.end() || !v->is_number_integer())
    return std::unexpected(bad_manifest(path, util::msg("\"manifest\" missing or of the wrong type")));
  m.version = static_cast<int>(std::clamp<std::int64_t>(v->get<std::int64_t>(), -1, 1 << 20));
  if (m.version != manifest_version) return m; // another format: the caller ignores it without a word
  m.filename = ENVFIX_TRY(field<std::string>(j, "filename", path));
  m.archive_size = ENVFIX_TRY(field<std::uint64_t>(j, "archive_size", path));
  m.name = ENVFIX_TRY(field<std::string>(j, "name", path));
  m.version_text = ENVFIX_TRY(field<std::string>(j, "version", path));
  m.dist_info = ENVFIX_TRY(field<std::string>(j, "dist_info", path));
  m.data_dir = ENVFIX_TRY(field<std::string>(j, "data_dir", path));
  m.root_is_purelib = ENVFIX_TRY(field<bool>(j, "root_is_purelib", path));
  m.wheel_version = ENVFIX_TRY(field<std::string>(j, "wheel_version", path));
  m.metadata = ENVFIX_TRY(field<std::string>(j, "metadata", path));
  m.entry_points = ENVFIX_TRY(field<std::string>(j, "entry_points", path));
  auto w = j.find("warnings");
  if (w == j.end()) return std::unexpected(bad_manifest(path, util::msg("\"warnings\" missing")));
  m.warnings = ENVFIX_TRY(strings(*w, path, "\"warnings\""));
  auto files = j.find("files");
  if (files == j.end() || !files->is_array())
    return std::unexpected(bad_manifest(path, util::msg("\"files\" missing or not a list")));
  m.files.reserve(files->size());
  for (std::size_t k = 0; k < files->size(); ++k) m.files.push_back(ENVFIX_TRY(parse_file((*files)[k], path, k)));
  return m;
}

// ---- entry locks ------------------------------------------------------------------------------------

namespace {

// <root>/.locks/<sha256>: outside the entry, so that it outlives the entry's replacement. One
// descriptor per lock file in this process (flock belongs to the open file description: a second
// one would wait on the first), kept until the process ends or add() converts it.
struct EntryLocks {
  std::mutex mutex;
  std::map<std::string, util::Fd> shared; // lock path -> descriptor holding LOCK_SH
};
EntryLocks& entry_locks() {
  static EntryLocks l;
  return l;
}

fs::path lock_path(const fs::path& root, std::string_view sha256) { return root / ".locks" / std::string(sha256); }

// The entry's lock file, created where the cache is writable. On a cache this run cannot write (a
// read-only mount, files without write permission) an existing one is opened read-only (flock needs
// no write access) and `*unwritable` is set: where none exists, no run with these rights can replace
// the entry either, so it is served without one (issue 60, 7).
util::Fd open_lock(const fs::path& path, bool* unwritable = nullptr) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  util::Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.valid() || (errno != EROFS && errno != EACCES && errno != EPERM)) return fd;
  if (unwritable) *unwritable = true;
  return util::Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
}

// flock with LOCK_NB retried every 10 ms for up to `bound`.
bool flock_within(int fd, int op, std::chrono::milliseconds bound) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (true) {
    if (::flock(fd, op | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= end) return false;
    ::usleep(10000);
  }
}

// A shared hold on the entry, kept for the life of the process; false when it cannot be had (an
// add() of another run is replacing it for longer than the bound, or the lock cannot be created).
bool hold_shared(const fs::path& root, std::string_view sha256) {
  const auto path = lock_path(root, sha256).string();
  {
    std::lock_guard g(entry_locks().mutex);
    if (entry_locks().shared.contains(path)) return true;
  }
  bool unwritable = false;
  util::Fd fd = open_lock(path, &unwritable);
  if (!fd.valid()) return unwritable;
  if (!flock_within(fd.get(), LOCK_SH, std::chrono::seconds(30))) return false;
  std::lock_guard g(entry_locks().mutex);
  entry_locks().shared.try_emplace(path, std::move(fd));
  return true;
}

void release_shared(const fs::path& root, std::string_view sha256) {
  std::lock_guard g(entry_locks().mutex);
  entry_locks().shared.erase(lock_path(root, sha256).string());
}

// The exclusive lock for replacing the entry, on this process's descriptor when it holds one
// (converted), else a new one; invalid when another run holds the entry shared past the bound.
util::Fd take_exclusive(const fs::path& root, std::string_view sha256) {
  const auto path = lock_path(root, sha256).string();
  util::Fd fd;
  {
    std::lock_guard g(entry_locks().mutex);
    if (auto it = entry_locks().shared.find(path); it != entry_locks().shared.end()) {
      fd = std::move(it->second);
      entry_locks().shared.erase(it);
    }
  }
  if (!fd.valid()) fd = open_lock(path);
  if (!fd.valid() || !flock_within(fd.get(), LOCK_EX, std::chrono::seconds(2))) return util::Fd();
  return fd;
}

// After the replacement: back to shared, kept like hold_shared's.
void keep_shared(const fs::path& root, std::string_view sha256, util::Fd fd) {
  if (!fd.valid() || ::flock(fd.get(), LOCK_SH) != 0) return;
  std::lock_guard g(entry_locks().mutex);
  entry_locks().shared.insert_or_assign(lock_path(root, sha256).string(), std::move(fd));
}

} // namespace

// ---- the cache ------------------------------------------------------------------------------------

namespace {

// Files larger than this also record a sha256 of each such piece of them (the manifest's eighth
// field), taken when the entry is added: re-hashing a moved 1 GB shared object then runs on many
// threads instead of one, which bounded a warm install of the real torch set (the largest files
// of torch and the nvidia wheels, one after another).
constexpr std::uint64_t piece_bytes = 32ull << 20;

std::size_t pieces_of(std::uint64_t size) { return static_cast<std::size_t>((size + piece_bytes - 1) / piece_bytes); }

// sha256 (hex) of [offset, offset + length) of `path`.
Expected<std::string> range_hash(const std::string& path, std::uint64_t offset, std::uint64_t length) {
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail_errno(errno, ErrorCode::io, "cannot read {}: {}", path, std::strerror(errno));
  util::Sha256 h;
  std::vector<char> buf(1 << 20);
  while (length > 0) {
    auto n = util::retry_eintr(
        [&] { return ::pread(fd.get(), buf.data(), std::min<std::uint64_t>(buf.size(), length), static_cast<off_t>(offset)); });
    if (n <= 0) return fail_errno(errno, ErrorCode::io, "cannot read {}: {}", path, n < 0 ? std::strerror(errno) : "short file");
    h.update(buf.data(), static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
    length -= static_cast<std::uint64_t>(n);
  }
  return h.hex_digest();
}

// One entry's manifest read and every file stat'ed; what still needs hashing is listed.
struct LoadedEntry {
  fs::path dir;
  wheel::StagedWheel sw;
  std::vector<std::size_t> rehash;              // files whose inode or change time moved
  std::vector<std::vector<std::string>> pieces; // per file: piece hashes (empty: whole-file hash only)
};

// The entry asked for by a lock or an index: the manifest names that very wheel file, and its name
// and version are the file name's (an entry filed under another package's sha256 is not used).
bool is_wheel_asked(const UnpackedManifest& m, std::string_view filename) {
  auto wf = specs::WheelFilename::parse(m.filename);
  auto version = specs::Version::parse(m.version_text);
  if (!wf || !version || specs::normalize_name(wf->name) != specs::normalize_name(m.name) ||
      wf->version.to_string() != version->to_string())
    return false;
  return filename.empty() || m.filename == filename;
}

// Reads the manifest and stats every file. A damaged manifest (wrong types, bad names, another
// package) says so in `warning`; a missing or older-format one is absent without a word.
std::optional<LoadedEntry> load_entry(const fs::path& root, std::string_view sha256, std::string_view filename,
                                      util::Message& warning) {
  if (!valid_sha256(sha256)) return std::nullopt;
  LoadedEntry e;
  e.dir = root / std::string(sha256);
  const fs::path path = e.dir / manifest_name;
  // The manifest decides which files are linked in: read through the cache's trust check (a foreign
  // or group-writable one is ignored, with a warning), as every other cache entry is.
  auto text = util::read_trusted(path);
  if (!text) return std::nullopt;
  auto m = parse_manifest(*text, path);
  if (!m) {
    warning = util::msg("{}; {}", m.error().said_message(), m.error().hint);
    return std::nullopt;
  }
  if (m->version != manifest_version) return std::nullopt;
  auto& sw = e.sw;
  sw.wheel = e.dir / m->filename;
  sw.tree = e.dir / "tree";
  sw.archive_size = m->archive_size;
  sw.name = m->name;
  sw.version = m->version_text;
  sw.dist_info = m->dist_info;
  sw.data_dir = m->data_dir;
  sw.root_is_purelib = m->root_is_purelib;
  sw.wheel_version = m->wheel_version;
  sw.metadata = m->metadata;
  sw.entry_points = m->entry_points;
  sw.warnings = m->warnings;
  if (!valid_manifest_names(sw, m->filename)) {
    warning =
        util::msg("{}: damaged unpacked-cache manifest: a file or directory name breaks the wheel rules; ignored", path.string());
    return std::nullopt;
  }
  if (!is_wheel_asked(*m, filename)) {
    warning = util::msg("{}: the unpacked-cache entry under sha256 {} holds {} {} ({}), not {}; ignored", path.string(), sha256,
                        m->name, m->version_text, m->filename,
                        filename.empty() ? util::msg("its own file name's package") : util::plain(std::string(filename)));
    return std::nullopt;
  }
  std::set<std::string_view> members;
  sw.files.reserve(m->files.size());
  e.pieces.reserve(m->files.size());
  for (auto& f : m->files) {
    wheel::StagedFile sf;
    sf.member = f.member;
    sf.hash = f.hash;
    sf.size = f.size;
    sf.executable = f.executable;
    auto& pieces = f.pieces;
    if (!pieces.empty() && (pieces.size() != pieces_of(sf.size) ||
                            !std::all_of(pieces.begin(), pieces.end(), [](const std::string& h) { return valid_sha256(h); })))
      return std::nullopt;
    if (!wheel::check_member_name(sf.member) || sf.member.back() == '/' || !sf.hash.starts_with("sha256=")) return std::nullopt;
    sf.staged = (sw.tree / sf.member).string();
    // Intact = the very files the manifest describes. Size and mtime catch ordinary edits; an
    // edit that keeps both (a write, then utimensat) still moves the change time, which no
    // program can set back: such a file is hashed again, as is one whose inode changed.
    struct stat st;
    if (::lstat(sf.staged.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != sf.size ||
        mtime_ns(st) != f.mtime)
      return std::nullopt;
    sf.checked_ino = static_cast<std::uint64_t>(st.st_ino);
    sf.checked_ctime = ctime_ns(st);
    if (ctime_ns(st) != f.ctime || sf.checked_ino != f.ino) e.rehash.push_back(sw.files.size());
    sw.files.push_back(std::move(sf));
    e.pieces.push_back(std::move(pieces));
  }
  for (const auto& f : sw.files)
    if (!members.insert(f.member).second) return std::nullopt;
  return e;
}

} // namespace

std::optional<wheel::StagedWheel> UnpackedCache::find(std::string_view sha256, unsigned threads, FindStats* stats,
                                                      std::string_view filename) const {
  auto all = find_many({std::string(sha256)}, threads, stats, {std::string(filename)});
  return std::move(all.front());
}

std::vector<std::optional<wheel::StagedWheel>> UnpackedCache::find_many(const std::vector<std::string>& shas, unsigned threads,
                                                                        FindStats* stats,
                                                                        const std::vector<std::string>& filenames) const {
  threads = std::max(1u, threads);
  std::vector<std::optional<LoadedEntry>> loaded(shas.size());
  std::vector<util::Message> warnings(shas.size());
  (void)util::parallel_for(shas.size(), threads, [&](std::size_t i) -> Expected<void> {
    std::error_code ec;
    // Held shared before it is checked, so that what is checked is what gets linked (entry locks).
    if (!valid_sha256(shas[i]) || !fs::exists(m_root / shas[i] / manifest_name, ec) || !hold_shared(m_root, shas[i])) return {};
    loaded[i] =
        load_entry(m_root, shas[i], i < filenames.size() ? std::string_view(filenames[i]) : std::string_view(), warnings[i]);
    return {};
  });
  if (stats)
    for (auto& w : warnings)
      if (!w.empty()) stats->warnings.push_back(std::move(w));
  // Every file whose inode or change time moved, in every entry, hashed over one set of threads:
  // a file with piece hashes as one job per piece, else as one job. Longest jobs first.
  struct Job {
    std::size_t entry, file, piece; // piece == npos: the whole file against its RECORD hash
    std::uint64_t bytes;
  };
  constexpr std::size_t whole = static_cast<std::size_t>(-1);
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (!loaded[i]) continue;
    for (std::size_t k : loaded[i]->rehash) {
      const auto& f = loaded[i]->sw.files[k];
      const auto& pieces = loaded[i]->pieces[k];
      if (pieces.empty())
        jobs.push_back({i, k, whole, f.size});
      else
        for (std::size_t c = 0; c < pieces.size(); ++c)
          jobs.push_back({i, k, c, std::min(piece_bytes, f.size - c * piece_bytes)});
    }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.bytes > b.bytes; });
  std::vector<std::atomic<bool>> bad(loaded.size());
  (void)util::parallel_for(jobs.size(), threads, [&](std::size_t j) -> Expected<void> {
    const auto& job = jobs[j];
    if (bad[job.entry].load(std::memory_order_relaxed)) return {};
    const auto& e = *loaded[job.entry];
    const auto& f = e.sw.files[job.file];
    bool ok;
    if (job.piece == whole) {
      auto h = wheel::record_hash_file(f.staged);
      ok = h && *h == f.hash;
    } else {
      auto h = range_hash(f.staged, job.piece * piece_bytes, job.bytes);
      ok = h && *h == e.pieces[job.file][job.piece];
    }
    if (!ok) bad[job.entry] = true;
    return {};
  });
  std::vector<std::optional<wheel::StagedWheel>> out(loaded.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (!loaded[i] || bad[i]) { // absent, or changed under us: unpacked again from the archive
      if (valid_sha256(shas[i])) release_shared(m_root, shas[i]);
      continue;
    }
    auto& e = *loaded[i];
    // A re-hashed file is known good as of the change time seen before hashing, provided it is
    // still the same after (a write during the hash moves it). Known good, that change time goes
    // into the manifest: the next use hashes nothing until something touches the file again.
    std::unordered_map<std::string, std::pair<std::uint64_t, std::int64_t>> healed;
    bool changed = false;
    for (std::size_t k : e.rehash) {
      const auto& f = e.sw.files[k];
      struct stat st;
      if (::lstat(f.staged.c_str(), &st) != 0 || ctime_ns(st) != f.checked_ctime ||
          static_cast<std::uint64_t>(st.st_ino) != f.checked_ino) {
        changed = true;
        break;
      }
      healed.emplace(f.member, std::pair{f.checked_ino, f.checked_ctime});
    }
    if (changed) {
      release_shared(m_root, shas[i]);
      continue;
    }
    if (stats) stats->rehashed += e.rehash.size();
    refresh_manifest(e.dir, healed);
    out[i] = std::move(e.sw);
  }
  return out;
}

Expected<fs::path> UnpackedCache::make_temp() const {
  ENVFIX_TRY_VOID(util::create_directories(m_root));
  return util::make_temp_dir(m_root, ".tmp-");
}

Expected<wheel::StagedWheel> UnpackedCache::stage(const fs::path& wheel, std::string_view sha256,
                                                  const wheel::StagingOptions& options) const {
  const fs::path temp = ENVFIX_TRY(make_temp());
  auto staged = wheel::stage_wheel(wheel, temp / "tree", options);
  auto entry = staged ? add(sha256, std::move(*staged), temp) : Expected<wheel::StagedWheel>(std::unexpected(staged.error()));
  if (!entry) remove_quietly(temp);
  return entry;
}

void UnpackedCache::remove_stale(std::chrono::seconds age) const {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(m_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(".tmp-") && !name.starts_with(".old-")) continue;
    std::error_code tec;
    auto t = fs::last_write_time(it->path(), tec);
    if (!tec && now - t > age) remove_quietly(it->path());
  }
}

Expected<wheel::StagedWheel> UnpackedCache::add(std::string_view sha256, wheel::StagedWheel staged, const fs::path& temp) const {
  if (!valid_sha256(sha256)) return fail(ErrorCode::internal, "unpacked cache: '{}' is not a sha256", sha256);
  // Piece hashes of the large files (find_many), taken from the bytes the stager just wrote and
  // checked against RECORD, over all threads.
  std::vector<std::pair<std::size_t, std::size_t>> piece_jobs; // (file, piece)
  std::vector<std::vector<std::string>> pieces(staged.files.size());
  for (std::size_t k = 0; k < staged.files.size(); ++k)
    if (staged.files[k].size > piece_bytes) {
      pieces[k].resize(pieces_of(staged.files[k].size));
      for (std::size_t c = 0; c < pieces[k].size(); ++c) piece_jobs.emplace_back(k, c);
    }
  ENVFIX_TRY_VOID(util::parallel_for(piece_jobs.size(), util::default_threads(), [&](std::size_t j) -> Expected<void> {
    const auto [k, c] = piece_jobs[j];
    const auto& f = staged.files[k];
    pieces[k][c] = ENVFIX_TRY(range_hash(f.staged, c * piece_bytes, std::min(piece_bytes, f.size - c * piece_bytes)));
    return {};
  }));
  json files = json::array();
  for (std::size_t k = 0; k < staged.files.size(); ++k) {
    const auto& f = staged.files[k];
    struct stat st;
    if (::lstat(f.staged.c_str(), &st) != 0)
      return fail_errno(errno, ErrorCode::io, "unpacked cache: {}: {}", f.staged, std::strerror(errno));
    files.push_back(
        json::array({f.member, f.hash, f.size, f.executable, mtime_ns(st), ctime_ns(st), static_cast<std::uint64_t>(st.st_ino)}));
    if (!pieces[k].empty()) files.back().push_back(std::move(pieces[k]));
  }
  json j = {{"manifest", manifest_version},
            {"filename", staged.wheel.filename().string()},
            {"archive_size", staged.archive_size},
            {"name", staged.name},
            {"version", staged.version},
            {"dist_info", staged.dist_info},
            {"data_dir", staged.data_dir},
            {"root_is_purelib", staged.root_is_purelib},
            {"wheel_version", staged.wheel_version},
            {"metadata", staged.metadata},
            {"entry_points", staged.entry_points},
            {"warnings", staged.warnings},
            {"files", std::move(files)}};
  std::string text;
  try {
    text = j.dump();
  } catch (const std::exception& e) {
    return fail(ErrorCode::invalid_input, "{}: cannot record the unpacked wheel (a name is not UTF-8?): {}",
                staged.wheel.filename().string(), e.what());
  }
  // Not fsync'd: a cache entry lost to a power cut is unpacked again (find() checks every file).
  {
    util::Fd fd(::open((temp / manifest_name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid() || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      return fail_errno(errno, ErrorCode::io, "unpacked cache: cannot write {}: {}", (temp / manifest_name).string(),
                        std::strerror(errno));
  }
  const fs::path entry = m_root / std::string(sha256);
  // Exclusive while the entry is put in place: a run holding it shared (it checked it and links
  // from it) keeps its files; ours is then not needed.
  util::Fd exclusive = take_exclusive(m_root, sha256);
  if (!exclusive.valid()) {
    remove_quietly(temp);
    if (auto existing = find(sha256)) return *existing;
    return fail(ErrorCode::io, "unpacked cache: {} is in use by another envfix run and cannot be replaced now", entry.string());
  }
  if (::rename(temp.c_str(), entry.c_str()) != 0) {
    if (errno != ENOTEMPTY && errno != EEXIST)
      return fail_errno(errno, ErrorCode::io, "unpacked cache: rename {} → {}: {}", temp.string(), entry.string(),
                        std::strerror(errno));
    // An entry is already there (a damaged one, find() refused it, or a concurrent run's): swapped
    // with ours in one step (RENAME_EXCHANGE), so that the entry's name never points at nothing;
    // where the filesystem cannot, two renames. The old one is then dropped: nobody holds it.
    const fs::path trash = m_root / (".old-" + random_suffix());
    bool swapped = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, entry.c_str(), RENAME_EXCHANGE) == 0;
    if (swapped)
      remove_quietly(temp);
    else if (::rename(entry.c_str(), trash.c_str()) != 0 || ::rename(temp.c_str(), entry.c_str()) != 0) {
      remove_quietly(temp);
      keep_shared(m_root, sha256, std::move(exclusive));
      if (auto existing = find(sha256)) return *existing;
      return fail_errno(errno, ErrorCode::io, "unpacked cache: cannot replace {}: {}", entry.string(), std::strerror(errno));
    } else
      remove_quietly(trash);
  }
  keep_shared(m_root, sha256, std::move(exclusive));
  auto added = find(sha256);
  if (!added) return fail(ErrorCode::io, "unpacked cache: {} vanished or changed while being added", entry.string());
  return *added;
}

// ---- link_tree --------------------------------------------------------------------------------------

namespace {

// The first file decides what this filesystem pair can do: it is linked with the first mode of
// clone → hardlink → copy that `mode` allows and the filesystems support; that mode is used for the
// rest. Also returns the first "unsupported" errno seen, for the fallback message.
struct FirstLink {
  LinkMode used = LinkMode::copy;
  int first_err = 0;
};
Expected<FirstLink> link_first(LinkMode mode, const std::string& from, const std::string& to, mode_t file_mode) {
  std::vector<LinkMode> order;
  if (mode == LinkMode::automatic || mode == LinkMode::clone) order.push_back(LinkMode::clone);
  if (mode == LinkMode::automatic || mode == LinkMode::clone || mode == LinkMode::hardlink) order.push_back(LinkMode::hardlink);
  order.push_back(LinkMode::copy);
  FirstLink out;
  for (auto m : order) {
    int err = link_one(m, from, to, file_mode);
    if (err == 0) {
      out.used = m;
      return out;
    }
    if (!unsupported(err, m)) return fail_errno(err, ErrorCode::io, "{} {} → {}: {}", to_string(m), from, to, std::strerror(err));
    if (!out.first_err) out.first_err = err;
  }
  return out;
}

} // namespace

Expected<LinkResult> link_tree(wheel::StagedWheel cached, const fs::path& dest_tree, LinkMode mode, unsigned threads) {
  // The entry is rewritten in place (every path moves to dest_tree) rather than copied: it holds
  // one record per file. A file's source path in the cache is rebuilt from its member name.
  LinkResult out;
  const std::string src_tree = cached.tree.string();
  out.staged = std::move(cached);
  out.staged.tree = dest_tree;
  const auto& files = out.staged.files;
  auto src = [&](std::size_t k) { return src_tree + "/" + files[k].member; };
  std::error_code ec;
  if (fs::exists(dest_tree, ec)) return fail(ErrorCode::io, "{} already exists", dest_tree.string());
  ENVFIX_TRY_VOID(util::create_directories(dest_tree));
  struct Cleanup {
    fs::path dir;
    bool armed = true;
    ~Cleanup() {
      if (armed) remove_quietly(dir);
    }
  } cleanup{dest_tree};

  std::set<std::string> dirs;
  std::vector<mode_t> modes(files.size());
  const std::string dest_root = dest_tree.string();
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto& f = out.staged.files[i];
    const std::string from = src(i);
    struct stat st;
    if (::stat(from.c_str(), &st) != 0)
      return fail_errno(errno, ErrorCode::io, "unpacked cache: {}: {}", from, std::strerror(errno));
    modes[i] = st.st_mode & 07777;
    f.staged = dest_root + "/" + f.member;
    auto parent = f.staged.substr(0, f.staged.rfind('/'));
    if (dirs.insert(parent).second) ENVFIX_TRY_VOID(util::create_directories(parent));
  }
  dirs.clear();
  if (files.empty()) {
    out.used = mode == LinkMode::automatic ? LinkMode::copy : mode;
    cleanup.armed = false;
    return out;
  }

  // Hard links share the cache's inode, and link(2) (then the install's rename, and unlinking what
  // staging kept) moves its change time: the manifest no longer matches and the next find() would
  // re-hash every file. Each file that still had the inode and change time it was verified with just
  // before its link gets the change time seen just after it, for LinkStamps (unpacked_cache.hpp).
  auto& relinked = out.linked_ctime; // per file: the change time after linking, or -1
  auto stamp = [&](std::size_t k, const struct stat& before) {
    const auto& f = files[k];
    struct stat after;
    if (before.st_ino == f.checked_ino && ctime_ns(before) == f.checked_ctime && f.checked_ctime != 0 &&
        ::lstat(f.staged.c_str(), &after) == 0 && after.st_ino == before.st_ino && after.st_size == before.st_size &&
        mtime_ns(after) == mtime_ns(before))
      relinked[k] = ctime_ns(after);
  };

  struct stat before0;
  if (::lstat(src(0).c_str(), &before0) != 0)
    return fail_errno(errno, ErrorCode::io, "unpacked cache: {}: {}", src(0), std::strerror(errno));
  const auto [first_used, first_err] = ENVFIX_TRY(link_first(mode, src(0), files[0].staged, modes[0]));
  out.used = first_used;
  if (mode != LinkMode::automatic && out.used != mode)
    out.fallback = util::msg("link mode {} is not possible from {} to {} ({}); used {}", to_string(mode), src_tree,
                             dest_tree.string(), std::strerror(first_err), to_string(out.used));

  const LinkMode used = out.used;
  if (used == LinkMode::hardlink) {
    relinked.assign(files.size(), -1);
    stamp(0, before0);
  }
  constexpr std::size_t chunk = 256;
  const std::size_t n = files.size() - 1;
  ENVFIX_TRY_VOID(util::parallel_for((n + chunk - 1) / chunk, threads, [&](std::size_t c) -> Expected<void> {
    for (std::size_t k = 1 + c * chunk; k < std::min(files.size(), 1 + (c + 1) * chunk); ++k) {
      const std::string from = src(k);
      struct stat before;
      const bool stamped = used == LinkMode::hardlink && ::lstat(from.c_str(), &before) == 0;
      int err = link_one(used, from, files[k].staged, modes[k]);
      if (err != 0 && unsupported(err, used))
        err = util::copy_file_exclusive(from, files[k].staged, modes[k]);
      else if (err == 0 && stamped)
        stamp(k, before);
      if (err != 0)
        return with_errno(make_error(ErrorCode::io,
                                     fmt::format("{} {} → {}: {}", to_string(used), from, files[k].staged, std::strerror(err)),
                                     err == ENOSPC || err == EDQUOT ? "the disk is full; free space and retry" : ""),
                          err);
    }
    return {};
  }));
  if (used == LinkMode::hardlink) out.entry = fs::path(src_tree).parent_path();
  cleanup.armed = false;
  return out;
}

// ---- LinkStamps -------------------------------------------------------------------------------------

void LinkStamps::add(const LinkResult& linked) {
  if (linked.entry.empty()) return;
  const auto& files = linked.staged.files;
  for (std::size_t k = 0; k < files.size() && k < linked.linked_ctime.size(); ++k)
    if (linked.linked_ctime[k] >= 0)
      m_files.push_back({m_entries.size(), files[k].member, files[k].staged, {}, files[k].checked_ino, linked.linked_ctime[k]});
  m_entries.push_back(linked.entry);
}

void LinkStamps::before_install(const std::function<const std::string*(const std::string&)>& dest_of, unsigned threads) {
  (void)util::parallel_for(m_files.size(), std::max(1u, threads), [&](std::size_t k) -> Expected<void> {
    auto& f = m_files[k];
    struct stat st;
    const std::string* dest = dest_of(f.staged);
    // Untouched since its link, and renamed into the environment: else not refreshed (re-hashed).
    if (!dest || ::lstat(f.staged.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != f.ino || ctime_ns(st) != f.ctime)
      f.ino = 0;
    else
      f.installed = *dest;
    return {};
  });
}

void LinkStamps::after_install(unsigned threads) const {
  if (m_files.empty()) return;
  std::vector<std::int64_t> now(m_files.size(), -1);
  (void)util::parallel_for(m_files.size(), std::max(1u, threads), [&](std::size_t k) -> Expected<void> {
    const auto& f = m_files[k];
    struct stat st;
    // Moved by nothing between its link and the renames (before_install): what moved its change
    // time since is the rename, or an edit during the renames (docs/reliability.md, row 12).
    if (f.ino != 0 && ::lstat(f.installed.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_ino) == f.ino)
      now[k] = ctime_ns(st);
    return {};
  });
  std::vector<std::unordered_map<std::string, std::pair<std::uint64_t, std::int64_t>>> by_entry(m_entries.size());
  for (std::size_t k = 0; k < m_files.size(); ++k)
    if (now[k] >= 0) by_entry[m_files[k].entry].emplace(m_files[k].member, std::pair{m_files[k].ino, now[k]});
  for (std::size_t e = 0; e < m_entries.size(); ++e) refresh_manifest(m_entries[e], by_entry[e]);
}

} // namespace envfix::installer
