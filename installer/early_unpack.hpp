#pragma once
// Unpacking each wheel into the unpacked cache as soon as its download is verified, while the rest
// still download: a cold torch set spends about as long unpacking as downloading, and done one
// after the other the two add up (docs/performance-real.md, cold install). An optimisation only: a
// wheel this could not unpack is left to the transaction, which unpacks it again and reports the
// failure as it always has.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "installer/unpacked_cache.hpp"
#include "wheel/staging.hpp"

namespace envfix::installer {

class EarlyUnpacker {
public:
  // `slots` results, `workers` wheels at a time, each unpacked on `threads` threads.
  EarlyUnpacker(const UnpackedCache& cache, std::size_t slots, unsigned workers, unsigned threads);
  EarlyUnpacker(const EarlyUnpacker&) = delete;
  EarlyUnpacker& operator=(const EarlyUnpacker&) = delete;
  ~EarlyUnpacker(); // drops what is still queued and waits for the wheels being unpacked
  // Queues slot `i`: the verified archive `wheel` whose sha256 is `sha256`.
  void ready(std::size_t i, std::filesystem::path wheel, std::string sha256);
  // Waits for everything queued; the cache entries made, by slot (none: not queued or failed).
  // `progress` (archive bytes unpacked, queued) is called on this thread while it waits, and once
  // at the end.
  using ProgressFn = std::function<void(std::uint64_t, std::uint64_t)>;
  [[nodiscard]] std::vector<std::optional<wheel::StagedWheel>> finish(const ProgressFn& progress = {});
  // Drops what is still queued and waits for the wheels being unpacked (a download failed).
  void cancel();

private:
  struct Job {
    std::size_t slot;
    std::filesystem::path wheel;
    std::string sha256;
    std::uint64_t bytes = 0;
  };
  void work();
  void stop(bool drop_queued);

  const UnpackedCache& m_cache;
  wheel::StagingOptions m_options;
  std::mutex m_mutex;
  std::condition_variable m_wake, m_idle;
  std::deque<Job> m_queue;
  bool m_closed = false;
  std::size_t m_active = 0;                           // jobs being unpacked
  std::uint64_t m_queued_bytes = 0, m_done_bytes = 0; // archive bytes, for progress
  std::vector<std::optional<wheel::StagedWheel>> m_out;
  std::vector<std::thread> m_workers;
};

} // namespace envfix::installer
