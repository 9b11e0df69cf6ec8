#pragma once
// Talks to wheel indexes: project pages (PEP 503 HTML / PEP 691 JSON, revalidated through an HTTP
// cache), find-links folders, file:// indexes and local wheels, metadata without downloading whole
// wheels (PEP 658 -> range reads of the zip directory -> full download), and hash-verified downloads
// into a sha256-addressed cache. Chooses nothing: the resolver does.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "index/candidate.hpp"
#include "index/http_client.hpp"
#include "index/project_page.hpp"
#include "util/error.hpp"

namespace envfix::index {

struct IndexClientOptions {
  std::filesystem::path cache_dir; // empty: default_cache_dir()
  bool offline = false;            // serve only from the cache; errors name what is missing
  bool refresh = false;            // revalidate pages even when their max-age says fresh
  bool use_range_requests = true;  // lazy-wheel metadata when there is no .metadata file
  std::uint64_t max_page_bytes = 64ull << 20;
  // A download stops (and fails) past the size the index published, else past this limit.
  std::uint64_t max_download_bytes = 64ull << 30;
  std::uint64_t range_tail_bytes = 64 * 1024;
  std::size_t parallelism = 8; // concurrent transfers in the *_many calls
  HttpOptions http;
  // The index and find-links locations the run was given: the page memo replays only pages on their
  // hosts, or on the hosts of the run's first page call (index/page_memo.hpp).
  std::vector<std::string> index_urls;
};

enum class MetadataSource { cache, pep658, range_requests, full_download, local_file };
[[nodiscard]] const char* to_string(MetadataSource);

// Counters for tests, benchmarks and `-v` output.
struct IndexStats {
  std::uint64_t page_requests = 0, page_fresh_hits = 0, page_revalidated = 0, page_offline_hits = 0;
  // Rounds of page requests that went to a server; pages the memo (index/page_memo.hpp) joined to the first.
  std::uint64_t page_rounds = 0, page_companions = 0;
  std::uint64_t metadata_cache = 0, metadata_pep658 = 0, metadata_range = 0, metadata_full = 0, metadata_local = 0;
  std::uint64_t downloads = 0, download_cache_hits = 0, bytes_downloaded = 0, range_requests = 0;
};

// $ENVFIX_CACHE_DIR, else $XDG_CACHE_HOME/envfix, else ~/.cache/envfix.
[[nodiscard]] Expected<std::filesystem::path> default_cache_dir();
// The core metadata of a local wheel file: its one top-level `*.dist-info/METADATA`, read through
// the bounds-checked zip reader (index/zip_metadata.hpp) with range reads, not the whole archive.
[[nodiscard]] Expected<std::string> read_local_metadata(const std::filesystem::path& wheel);
// Another member of that folder ("RECORD").
[[nodiscard]] Expected<std::string> read_local_dist_info(const std::filesystem::path& wheel, std::string_view member);

class IndexClient {
public:
  [[nodiscard]] static Expected<IndexClient> create(IndexClientOptions options);
  IndexClient(IndexClient&&) noexcept;
  IndexClient& operator=(IndexClient&&) noexcept;
  ~IndexClient();

  // --offline: every page and file comes from the cache.
  [[nodiscard]] bool offline() const;
  // `index_url`: an http(s) simple index base ("https://download.pytorch.org/whl/cu128"), a file://
  // index, a local directory (PEP 503 tree or flat find-links folder), or a local .whl path.
  [[nodiscard]] Expected<std::vector<Candidate>> project_candidates(const std::string& index_url, const std::string& project);
  // The pages of several projects of one index at once (HTTP: one multi handle, so the requests share
  // connections and HTTP/2 streams); results in the order of `projects`.
  [[nodiscard]] std::vector<Expected<std::vector<Candidate>>> project_candidates_many(const std::string& index_url,
                                                                                      std::span<const std::string> projects);
  // Same, with page warnings (skipped anchors, api-version).
  [[nodiscard]] Expected<ProjectPage> project_page(const std::string& index_url, const std::string& project);
  // A find-links location: a directory of files or an HTML page listing files of many projects.
  [[nodiscard]] Expected<std::vector<Candidate>> find_links_candidates(const std::string& location, const std::string& project);

  // METADATA text of a wheel (PEP 658 -> range reads -> full download), cached.
  [[nodiscard]] Expected<std::string> fetch_metadata(const Candidate& candidate, MetadataSource* source = nullptr);
  // The RECORD of a wheel (which files, with which sha256): from the cached or local file, else by
  // range reads (the central directory and the one member), never a whole download. An error when
  // none of these can answer (offline and not cached, a server without ranges).
  [[nodiscard]] Expected<std::string> fetch_record(const Candidate& candidate);
  // Drops the cached METADATA of a candidate (its wheel disagreed with it): the next fetch asks again.
  void forget_metadata(const Candidate& candidate);
  // Path of the verified file in the cache (<cache>/wheels/<sha256[:2]>/<sha256>/<filename>).
  [[nodiscard]] Expected<std::filesystem::path> download(const Candidate& candidate, ProgressFn progress = {});

  // PEP 658 files are fetched as one batch on the shared connection(s); the rest in parallel chains.
  [[nodiscard]] std::vector<Expected<std::string>> fetch_metadata_many(std::span<const Candidate> candidates);
  // progress(index into candidates, done, total)
  using ManyProgressFn = std::function<void(std::size_t, std::uint64_t, std::optional<std::uint64_t>)>;
  // Told each file that is verified and in the cache as soon as it is (cache hits first, then each
  // download as it completes, on the calling thread while the rest still download).
  using ReadyFn = std::function<void(std::size_t, const std::filesystem::path&)>;
  [[nodiscard]] std::vector<Expected<std::filesystem::path>> download_many(std::span<const Candidate> candidates,
                                                                           ManyProgressFn progress = {}, ReadyFn ready = {});

  // Bytes of a candidate's file when the page gave none: the cached or local file, else a HEAD (or a
  // one-byte range) request. nullopt when still unknown (offline, the server does not say); never 0.
  [[nodiscard]] std::optional<std::uint64_t> file_size(const Candidate& candidate);

  [[nodiscard]] IndexStats stats() const;
  // What the run met in the cache and ignored (a damaged entry, named by its file), once each.
  [[nodiscard]] std::vector<util::Message> warnings() const;
  [[nodiscard]] const std::filesystem::path& cache_dir() const;
  [[nodiscard]] const IndexClientOptions& options() const;

private:
  struct Impl;
  explicit IndexClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace envfix::index
