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
// cache too) invalidates the entry instead of spreading the edit. Hard-linking a file moves its
// change time, so entries used with --link-mode hardlink are re-hashed on their next use.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

// automatic: clone where the filesystem can (copy-on-write: as safe as a copy, as fast as a
// link), else hardlink, else copy.
enum class LinkMode { automatic, clone, hardlink, copy };
[[nodiscard]] const char* to_string(LinkMode mode);
[[nodiscard]] Expected<LinkMode> parse_link_mode(std::string_view text);

class UnpackedCache {
public:
  // `root` is <cache>/unpacked-v1; created on first add.
  explicit UnpackedCache(std::filesystem::path root) : m_root(std::move(root)) {}
  [[nodiscard]] const std::filesystem::path& root() const { return m_root; }

  // The entry for the wheel whose sha256 is `sha256`, when it exists and is intact: its manifest
  // passes staging's name rules, and every file has the size and mtime recorded, and either the
  // same inode and change time or (re-hashed on `threads` threads) the RECORD hash.
  [[nodiscard]] std::optional<wheel::StagedWheel> find(std::string_view sha256, unsigned threads = 1) const;
  // A fresh private directory to stage a wheel into before add().
  [[nodiscard]] Expected<std::filesystem::path> make_temp() const;
  // Turns a wheel staged under `temp` (from make_temp) into the entry for `sha256`; returns the
  // entry as find() would. An existing entry for the same hash (a concurrent run, or a damaged
  // one) is replaced atomically.
  [[nodiscard]] Expected<wheel::StagedWheel> add(std::string_view sha256, wheel::StagedWheel staged,
                                                 const std::filesystem::path& temp) const;

private:
  std::filesystem::path m_root;
};

struct LinkResult {
  wheel::StagedWheel staged;          // `cached` with every path under the new tree
  LinkMode used = LinkMode::copy;     // what was really done
  std::optional<std::string> fallback; // why the requested mode was not possible, if it was not
};
// Recreates the tree of `cached` at `dest_tree` (must not exist) with `mode`, on up to `threads`
// threads. Falls back clone → hardlink → copy when the filesystem refuses. Takes the entry by
// value and returns it rewritten (pass it with std::move when it is not needed again).
[[nodiscard]] Expected<LinkResult> link_tree(wheel::StagedWheel cached,
                                             const std::filesystem::path& dest_tree, LinkMode mode,
                                             unsigned threads = 1);

} // namespace envfix::installer
