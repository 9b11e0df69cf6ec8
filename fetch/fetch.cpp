// fetch/fetch.hpp: the planned files on disk. Moved here from api/apply.cpp, which now only
// sequences it (docs/architecture.md, Modules).
#include "fetch/fetch.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "installer/early_unpack.hpp"
#include "installer/unpacked_cache.hpp"
#include "specs/metadata.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/text.hpp"

namespace envfix::fetch {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void tell(const Progress& p, Stage s) {
  if (p.stage) p.stage(s);
}

// Wheels unpacked at once while the downloads run: the large ones have single members of hundreds
// of MB, each inflated by one core, so two workers left a queue of them behind the downloads on 16
// cores (docs/performance-real.md); half the threads, at least two, at most eight.
unsigned early_unpack_workers(unsigned threads) { return std::clamp(threads / 2, 2u, 8u); }

// The planned files already in the unpacked cache (each entry must hold the very file asked for);
// the indexes of the others, which must be fetched.
std::vector<std::size_t> find_unpacked(installer::UnpackedCache& cache, const std::vector<index::Candidate>& cands,
                                       std::vector<installer::WheelToInstall>& wheels, const Progress& progress) {
  std::vector<std::string> shas, filenames; // all entries looked up at once (UnpackedCache::find_many)
  for (const auto& c : cands) {
    shas.push_back(c.sha256.value_or(""));
    filenames.push_back(c.filename);
  }
  installer::UnpackedCache::FindStats stats;
  auto found = cache.find_many(shas, util::default_threads(), &stats, filenames);
  if (progress.warning)
    for (const auto& w : stats.warnings) progress.warning(w);
  std::vector<std::size_t> fetch;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    wheels[i].sha256 = cands[i].sha256;
    wheels[i].size = cands[i].size;
    wheels[i].cached = std::move(found[i]);
    if (!wheels[i].cached) fetch.push_back(i);
  }
  return fetch;
}

// Downloads `fetch` in parallel, hash-verified, reporting the bytes over all of them together (sizes
// the index did not publish join the total when their transfer announces them). Each verified
// download is unpacked into the cache while the others still download (installer/early_unpack.hpp);
// without early_unpack, the transaction does all unpacking.
Expected<void> download_and_unpack(index::IndexClient& client, installer::UnpackedCache& cache,
                                   const std::vector<index::Candidate>& fetch, std::vector<installer::WheelToInstall*> into,
                                   const std::function<std::string(std::size_t)>& where, const FetchOptions& o,
                                   const Progress& progress) {
  tell(progress, Stage::download);
  std::vector<std::uint64_t> done(fetch.size()), total(fetch.size());
  for (std::size_t k = 0; k < fetch.size(); ++k) total[k] = fetch[k].size.value_or(0);
  std::optional<installer::EarlyUnpacker> early;
  if (o.early_unpack) early.emplace(cache, fetch.size(), early_unpack_workers(o.threads), o.threads);
  std::vector<char> finished(fetch.size(), 0);
  // The total is known only once every unfinished file's size is: summing the sizes of the files
  // begun so far would draw a bar that is full from the first frame (issue 36, item 7).
  auto tell_bytes = [&] {
    std::uint64_t sd = 0, st = 0;
    std::size_t files_done = 0;
    bool known = true;
    for (std::size_t j = 0; j < fetch.size(); ++j) {
      sd += done[j];
      st += total[j];
      files_done += finished[j] ? 1 : 0;
      known = known && (total[j] > 0 || finished[j]);
    }
    if (progress.bytes) progress.bytes(Stage::download, sd, known ? std::max(st, sd) : 0, files_done, fetch.size());
  };
  auto on_bytes = [&](std::size_t k, std::uint64_t d, std::optional<std::uint64_t> t) {
    done[k] = d;
    if (t && *t > total[k]) total[k] = *t;
    tell_bytes();
  };
  auto ready = [&](std::size_t k, const fs::path& p) {
    if (!finished[k]) {
      finished[k] = 1;
      tell_bytes();
    }
    if (early && fetch[k].sha256) early->ready(k, p, *fetch[k].sha256);
  };
  auto results = client.download_many(fetch, on_bytes, ready);
  for (std::size_t k = 0; k < results.size(); ++k)
    if (!results[k]) {
      if (early) early->cancel();
      return std::unexpected(std::move(results[k].error()).context(where(k)));
    }
  std::vector<std::optional<wheel::StagedWheel>> unpacked(fetch.size());
  if (early) {
    // The unpacking still running once the downloads are done gets its bar (the transaction's
    // unpack phase then has only what this could not do).
    tell(progress, Stage::unpack);
    unpacked = early->finish([&progress](std::uint64_t d, std::uint64_t t) {
      if (progress.bytes) progress.bytes(Stage::unpack, d, t, 0, 0);
    });
  }
  for (std::size_t k = 0; k < results.size(); ++k) {
    auto& w = *into[k];
    w.wheel = *results[k];
    w.sha256_verified = w.sha256.has_value(); // download_many checked it against the index's hash
    if (unpacked[k]) {
      w.cached = std::move(unpacked[k]);
      w.unpacked_now = true;
    }
  }
  return {};
}

// Every file ready for the transaction: a wheel already in the unpacked cache needs nothing more
// (no download, no archive hash); the others are downloaded (or found in the wheel cache) in
// parallel, hash-verified. The first failure names the package.
Expected<std::vector<installer::WheelToInstall>> prepare_wheels(index::IndexClient& client,
                                                                const std::vector<index::Candidate>& cands,
                                                                const std::function<std::string(std::size_t)>& where,
                                                                const FetchOptions& o, const Progress& progress) {
  std::vector<installer::WheelToInstall> wheels(cands.size());
  installer::UnpackedCache cache(unpacked_cache_dir(client));
  const auto fetch_index = find_unpacked(cache, cands, wheels, progress);
  if (fetch_index.empty()) {
    tell(progress, Stage::download);
    return wheels;
  }
  // Something will be unpacked: first clear what a run killed mid-unpack left (not on a warm
  // install, where every wheel is a cache hit and nothing is written to the cache).
  cache.remove_stale();
  std::vector<index::Candidate> fetch;
  std::vector<installer::WheelToInstall*> into;
  for (auto i : fetch_index) {
    fetch.push_back(cands[i]);
    into.push_back(&wheels[i]);
  }
  auto where_fetched = [&](std::size_t k) { return where(fetch_index[k]); };
  ENVFIX_TRY_VOID(download_and_unpack(client, cache, fetch, into, where_fetched, o, progress));
  return wheels;
}

// The wheel's own METADATA: from the unpacked cache's entry, else the archive's one
// `*.dist-info/METADATA` (staging later refuses a wheel with none, or with two).
std::optional<std::string> own_metadata(const installer::WheelToInstall& w) {
  if (w.cached) return w.cached->metadata;
  auto text = index::read_local_metadata(w.wheel);
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

// Where the core metadata the resolver used (a PEP 658 file, range reads) and the wheel's own differ:
// name, version, Requires-Dist (as a set) and Requires-Python, each fact said both ways.
std::vector<std::string> metadata_differences(const specs::CoreMetadata& used, const specs::CoreMetadata& own) {
  std::vector<std::string> out;
  if (specs::normalize_name(used.name) != specs::normalize_name(own.name))
    out.push_back(fmt::format("Name: the index's metadata says {:?}, the wheel's METADATA says {:?}", used.name, own.name));
  if (used.version != own.version) // PEP 440 equality: 1.0 is 1.0.0
    out.push_back(fmt::format("Version: the index's metadata says {}, the wheel's METADATA says {}", used.version.to_string(),
                              own.version.to_string()));
  auto reqs = [](const specs::CoreMetadata& m) {
    std::set<std::string> s;
    for (const auto& r : m.requires_dist) s.insert(r.to_string());
    return s;
  };
  const auto a = reqs(used), b = reqs(own);
  for (const auto& r : b)
    if (!a.contains(r))
      out.push_back(fmt::format("Requires-Dist: the wheel's METADATA requires {:?}, the index's metadata does not", r));
  for (const auto& r : a)
    if (!b.contains(r))
      out.push_back(fmt::format("Requires-Dist: the index's metadata requires {:?}, the wheel's METADATA does not", r));
  auto rp = [](const specs::CoreMetadata& m) {
    return m.requires_python ? m.requires_python->to_string() : std::string("(none)");
  };
  if (rp(used) != rp(own))
    out.push_back(fmt::format("Requires-Python: the index's metadata says {}, the wheel's METADATA says {}", rp(used), rp(own)));
  return out;
}

} // namespace

fs::path unpacked_cache_dir(const index::IndexClient& client) { return client.cache_dir() / "unpacked-v1"; }

Expected<PreparedSet> prepare(index::IndexClient& client, const std::vector<WantedWheel>& want, std::set<std::string> family,
                              const std::function<std::string(std::size_t)>& where, const FetchOptions& options,
                              const Progress& progress) {
  const auto t0 = Clock::now();
  std::vector<index::Candidate> cands;
  for (const auto& w : want) cands.push_back(w.file);
  PreparedSet out;
  out.wheels = ENVFIX_TRY(prepare_wheels(client, cands, where, options, progress));
  out.family = std::move(family);
  for (std::size_t i = 0; i < want.size(); ++i) {
    auto& w = out.wheels[i];
    const auto& name = want[i].name;
    w.requested = want[i].requested;
    std::error_code ec;
    if (!w.sha256)
      out.local[name] = {ENVFIX_TRY(util::sha256_file_hex(w.wheel)), static_cast<std::uint64_t>(fs::file_size(w.wheel, ec))};
    else if (!w.size)
      out.local[name] = {*w.sha256, w.cached ? w.cached->archive_size : static_cast<std::uint64_t>(fs::file_size(w.wheel, ec))};
    out.names.push_back(name);
    out.gate_in.push_back({name, want[i].version, want[i].file.filename, w.sha256 ? *w.sha256 : out.local[name].sha256});
  }
  out.download_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

Expected<void> check_metadata_agrees(index::IndexClient& client, const resolver::Resolution& resolution,
                                     const resolver::Plan& plan, const std::vector<installer::WheelToInstall>& wheels) {
  for (std::size_t i = 0; i < wheels.size() && i < plan.install.size(); ++i) {
    const auto* pin = resolution.find(plan.install[i].name);
    if (!pin || !pin->metadata) continue;
    const auto text = own_metadata(wheels[i]);
    if (!text) continue; // staging refuses such a wheel, naming what is wrong
    auto own = specs::CoreMetadata::parse(*text);
    if (!own) continue;
    auto diff = metadata_differences(*pin->metadata, *own);
    if (diff.empty()) continue;
    client.forget_metadata(pin->file);
    for (auto& d : diff) d = util::escape_control(d);
    return std::unexpected(Error::made(
        ErrorCode::invalid_input,
        util::msg("the index's core metadata for {} ({}) disagrees with the wheel's own METADATA: {}",
                  util::escape_control(pin->file.filename), index::redact_url(pin->file.url), diff.front()),
        util::plains({diff.begin() + 1, diff.end()}),
        util::msg("the plan was made from metadata (PEP 658 .metadata) that is not the wheel's, so nothing was installed; "
                  "report it to the index's operator (its cached copy was dropped: the next run reads the downloaded wheel's "
                  "own)")));
  }
  return {};
}

std::vector<installer::GatePackage> gate_packages(const std::vector<GateInput>& wheels, std::string_view variant,
                                                  const std::set<std::string>& family,
                                                  const std::optional<std::set<std::string>>& libraries) {
  std::vector<installer::GatePackage> pkgs;
  for (const auto& w : wheels) {
    const auto role = family.contains(w.name)                     ? wheel::CodeRole::framework
                      : !libraries || libraries->contains(w.name) ? wheel::CodeRole::library
                                                                  : wheel::CodeRole::extension;
    installer::GatePackage p{w.name, w.version, {}, role, w.sha256};
    if (auto wf = specs::WheelFilename::parse(w.filename)) p.key = wheel::build_key(*wf, variant);
    pkgs.push_back(std::move(p));
  }
  return pkgs;
}

} // namespace envfix::fetch
