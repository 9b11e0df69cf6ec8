#pragma once
// A minimal fork-join loop for CPU/disk-bound batches (unpacking, linking, hashing): no pool
// outlives the call, so nothing runs after the caller returns and no state is shared between
// batches. The first error by task index wins, which keeps errors deterministic.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

#include "util/env.hpp"
#include "util/error.hpp"

namespace envfix::util {

// Threads to use when the caller does not say: the hardware fallback of configured_threads().
[[nodiscard]] inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

// $ENVFIX_THREADS when it is a whole number from 1 to 1024, else default_threads(): the unpack, link,
// hash and kernel-read threads of a run.
[[nodiscard]] inline unsigned configured_threads() {
  if (auto t = get_env(Env::threads)) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), n);
    if (ec == std::errc() && end == t->data() + t->size() && n >= 1 && n <= 1024) return n;
  }
  return default_threads();
}

// Runs fn(i) for i in [0, n) on up to `threads` threads (the caller's thread is one of them).
// After the first failure no new task starts; tasks already running finish.
template <class Fn>
[[nodiscard]] Expected<void> parallel_for(std::size_t n, unsigned threads, Fn&& fn) {
  if (n == 0) return {};
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(n)));
  std::vector<std::optional<Error>> errors(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      Expected<void> r = fn(i);
      if (!r) {
        errors[i] = std::move(r.error());
        failed.store(true);
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(threads - 1);
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }
  for (auto& e : errors)
    if (e) return std::unexpected(std::move(*e));
  return {};
}

} // namespace envfix::util
