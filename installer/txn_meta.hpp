#pragma once
// The header of a transaction's journal (<prefix>/.envfix/txn/<id>/ops.json, installer/transaction.cpp):
// read back by recover, rollback and the backup listing from a directory that a crash, a full disk or
// anyone who can write the environment may have damaged, so it is parsed with every type checked.
// Pure value type: print and parse, no I/O.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::installer {

// One reversible step, in execution order. Paths are plain strings (see FileMove).
struct TxnOp {
  enum class Kind { move, mkdir, rmdir };
  Kind kind = Kind::move;
  std::string path;     // move: source; mkdir/rmdir: the directory
  std::string dest;     // move: destination
  unsigned mode = 0755; // mkdir/rmdir: directory mode to create/restore
};

struct DistRef {
  std::string name, version;
};

struct TxnMeta {
  std::string id;
  std::string kind = "apply"; // apply | rollback
  std::string rolls_back;     // for kind rollback: the id undone
  std::int64_t started = 0;   // unix seconds; byte-code newer than this is ours to delete
  std::vector<TxnOp> ops;
  std::size_t split = 0; // ops[0, split) remove, ops[split, n) install
  std::vector<DistRef> installed, removed;
  // Directories outside the transaction directory that belong to it (see AuxDirs).
  std::vector<std::filesystem::path> aux;
};

// ops.json of `m`; an error when a path is not UTF-8 (JSON cannot carry it).
[[nodiscard]] Expected<std::string> txn_meta_json(const TxnMeta& m);
// `text` of the ops.json at `path` (named in errors). `with_ops` false skips the steps (one per file)
// without building them: discarding a journal, sizing a backup or listing what it did needs only the
// header. Any type, count or mode out of place is an error naming the file, never an exception.
[[nodiscard]] Expected<TxnMeta> parse_txn_meta(std::string_view text, const std::filesystem::path& path, bool with_ops = true);

} // namespace envfix::installer
