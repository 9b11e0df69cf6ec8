#pragma once
// The unpacked-wheel cache and link modes (uv's archive cache): a wheel is unpacked and checked
// against its RECORD once, into <cache>/unpacked-v1/<sha256 of the .whl>/tree, with a manifest of
// every file (hash, size, mtime). Later installs of the same file skip the download, the archive
// hash and the decompression: the tree is cloned (reflink), hard-linked or copied into the
// transaction's staging directory, and renamed into place from there as before.
//
// Trust: an entry is used only when every file still has the size and mtime the manifest
// recorded and either its inode and change time (which a write moves and nothing sets back) or
// its content hash, so a hard-linked file edited in place in some environment (which edits the
// cache too) invalidates the entry instead of spreading the edit. Links and unlinks of a hard-linked
// file move its change time too: envfix records the change times its own link and rename leave
// (LinkStamps), a file re-hashed and found good has its change time recorded, and re-hashing runs
// over all threads, large files in pieces (find_many).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "installer/link_mode.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

// An entry's manifest.json, read with checked types (it is input: another run, a crash or a user
// may have left anything there). The error names `path`.
struct ManifestFile {
  std::string member, hash;
  std::uint64_t size = 0;
  bool executable = false;
  std::int64_t mtime = 0, ctime = 0;
  std::uint64_t ino = 0;
  std::vector<std::string> pieces; // sha256 of each 32 MiB piece (large files only)
};
struct UnpackedManifest {
  int version = 0; // the "manifest" format number
  std::string filename, name, version_text, dist_info, data_dir, wheel_version, metadata, entry_points;
  std::uint64_t archive_size = 0;
  bool root_is_purelib = false;
  std::vector<std::string> warnings;
  std::vector<ManifestFile> files;
};
[[nodiscard]] Expected<UnpackedManifest> parse_manifest(std::string_view text, const std::filesystem::path& path);

class UnpackedCache {
public:
  // `root` is <cache>/unpacked-v1; created on first add.
  explicit UnpackedCache(std::filesystem::path root) : m_root(std::move(root)) {}
  [[nodiscard]] const std::filesystem::path& root() const { return m_root; }

  // The entry for the wheel whose sha256 is `sha256`, when it exists and is intact: its manifest
  // passes staging's name rules, and every file has the size and mtime recorded, and either the
  // same inode and change time or (re-hashed on `threads` threads) the RECORD hash.
  //
  // `filename`, when given, is the wheel the caller asks for (a lock's or an index's file name): an
  // entry under that sha256 whose manifest names another wheel, or whose name or version is not the
  // file name's, is not used (a planted or misfiled entry), with a warning.
  //
  // Concurrency: an entry this process found (or added) is held with a shared flock on
  // <root>/.locks/<sha256> until the process ends, so that another run's add() never replaces or
  // removes the files this one links from; add() replaces an entry only under the exclusive lock.
  struct FindStats {
    std::size_t rehashed = 0;            // files whose inode or change time had moved (hashed before use)
    std::vector<util::Message> warnings; // damaged or mismatched entries, each naming its manifest
  };
  [[nodiscard]] std::optional<wheel::StagedWheel> find(std::string_view sha256, unsigned threads = 1, FindStats* stats = nullptr,
                                                       std::string_view filename = {}) const;
  // find() of several entries at once: manifests read in parallel, and every file to re-hash, of
  // every entry, over one set of `threads` (large files in 32 MiB pieces), so that a warm install
  // is bounded by the bytes to hash rather than by its largest file. One result per hash, in order.
  // `filenames`: empty, or one expected file name per hash ("" for none).
  [[nodiscard]] std::vector<std::optional<wheel::StagedWheel>> find_many(const std::vector<std::string>& shas,
                                                                         unsigned threads = 1, FindStats* stats = nullptr,
                                                                         const std::vector<std::string>& filenames = {}) const;
  // A fresh private directory to stage a wheel into before add().
  [[nodiscard]] Expected<std::filesystem::path> make_temp() const;
  // Unpacks `wheel` (checked against RECORD, as staging does) into the entry for `sha256`, the
  // hash the caller verified the archive against; returns the entry as find() would. Nothing is
  // left in the cache on failure. apply uses it to unpack each download as it completes.
  [[nodiscard]] Expected<wheel::StagedWheel> stage(const std::filesystem::path& wheel, std::string_view sha256,
                                                   const wheel::StagingOptions& options) const;
  // Removes what runs killed mid-way left (make_temp directories, entries swapped out by add)
  // once it is older than `age`: a live run's directory is younger than that.
  void remove_stale(std::chrono::seconds age = std::chrono::hours(1)) const;
  // Turns a wheel staged under `temp` (from make_temp) into the entry for `sha256`; returns the
  // entry as find() would. An existing entry for the same hash (a concurrent run, or a damaged
  // one) is replaced atomically.
  [[nodiscard]] Expected<wheel::StagedWheel> add(std::string_view sha256, wheel::StagedWheel staged,
                                                 const std::filesystem::path& temp) const;

private:
  std::filesystem::path m_root;
};

struct LinkResult {
  wheel::StagedWheel staged;             // `cached` with every path under the new tree
  LinkMode used = LinkMode::copy;        // what was really done
  std::optional<util::Message> fallback; // why the requested mode was not possible, if it was not
  // Hard links only: the cache entry, and per file the change time just after its link (-1: the
  // file had moved since it was verified, or was copied), for LinkStamps.
  std::filesystem::path entry;
  std::vector<std::int64_t> linked_ctime;
};
// Recreates the tree of `cached` at `dest_tree` (must not exist) with `mode`, on up to `threads`
// threads. Falls back clone → hardlink → copy when the filesystem refuses. Takes the entry by
// value and returns it rewritten (pass it with std::move when it is not needed again).
[[nodiscard]] Expected<LinkResult> link_tree(wheel::StagedWheel cached, const std::filesystem::path& dest_tree, LinkMode mode,
                                             unsigned threads = 1);

// Keeps hard-linked cache entries fast to use. A hard link shares the cache's inode, and the link,
// the transaction's rename into the environment and the unlinking of staging each move its change
// time, so the manifest's no longer matches and the next find() re-hashes the file. The transaction
// tells this object when it renames (before_install, after_install); a file whose change time
// moved only by envfix's own link and rename gets its new change time written to the entry's
// manifest. An edit in between is told apart as far as the clock allows: one before the renames
// leaves the file as it was (re-hashed next time); one during the renames, a window as long as the
// install phase, is what this cannot see (docs/reliability.md, row 12).
class LinkStamps {
public:
  void add(const LinkResult& linked);
  // Just before the renames: `dest_of` gives a staged path's final path (nullptr: not installed).
  void before_install(const std::function<const std::string*(const std::string&)>& dest_of, unsigned threads);
  // Just after the renames, before anything else runs in the environment.
  void after_install(unsigned threads) const;
  [[nodiscard]] bool empty() const { return m_files.empty(); }

private:
  struct File {
    std::size_t entry;
    std::string member, staged, installed;
    std::uint64_t ino; // 0: not to be refreshed
    std::int64_t ctime;
  };
  std::vector<std::filesystem::path> m_entries;
  std::vector<File> m_files;
};

} // namespace envfix::installer
