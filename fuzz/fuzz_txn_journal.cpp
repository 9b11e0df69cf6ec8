// libFuzzer target: a transaction journal's ops.json (installer/txn_meta.hpp), read back by recover
// and rollback after a crash: any bytes give a value or an Error naming the file, never an exception;
// a value prints and parses back to itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "installer/txn_meta.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using envfix::installer::parse_txn_meta;
  (void)parse_txn_meta(text, "/venv/.envfix/txn/x/ops.json", false);
  auto m = parse_txn_meta(text, "/venv/.envfix/txn/x/ops.json", true);
  if (!m) return 0;
  auto json = envfix::installer::txn_meta_json(*m);
  if (!json) return 0; // a path that is not UTF-8 cannot be written back
  auto again = parse_txn_meta(*json, "/venv/.envfix/txn/x/ops.json", true);
  if (!again || again->id != m->id || again->ops.size() != m->ops.size() || again->split != m->split ||
      again->installed.size() != m->installed.size() || again->aux != m->aux)
    __builtin_trap();
  return 0;
}
