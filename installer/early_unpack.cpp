#include "installer/early_unpack.hpp"

#include <algorithm>

namespace envfix::installer {

EarlyUnpacker::EarlyUnpacker(const UnpackedCache& cache, std::size_t slots, unsigned workers, unsigned threads)
    : m_cache(cache), m_out(slots) {
  m_options.threads = threads;
  for (unsigned w = 0; w < std::max(1u, workers); ++w) m_workers.emplace_back([this] { work(); });
}

EarlyUnpacker::~EarlyUnpacker() { stop(true); }

void EarlyUnpacker::ready(std::size_t i, std::filesystem::path wheel, std::string sha256) {
  {
    std::lock_guard lock(m_mutex);
    if (m_closed || i >= m_out.size()) return;
    m_queue.push_back({i, std::move(wheel), std::move(sha256)});
  }
  m_wake.notify_one();
}

void EarlyUnpacker::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [&] { return m_closed || !m_queue.empty(); });
      if (m_queue.empty()) return;
      job = std::move(m_queue.front());
      m_queue.pop_front();
    }
    auto entry = m_cache.stage(job.wheel, job.sha256, m_options);
    std::lock_guard lock(m_mutex);
    if (entry) m_out[job.slot] = std::move(*entry);
  }
}

void EarlyUnpacker::stop(bool drop_queued) {
  {
    std::lock_guard lock(m_mutex);
    if (drop_queued) m_queue.clear();
    m_closed = true;
  }
  m_wake.notify_all();
  for (auto& t : m_workers)
    if (t.joinable()) t.join();
  m_workers.clear();
}

std::vector<std::optional<wheel::StagedWheel>> EarlyUnpacker::finish() {
  stop(false);
  return std::move(m_out);
}

void EarlyUnpacker::cancel() { stop(true); }

} // namespace envfix::installer
