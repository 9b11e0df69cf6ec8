#include <doctest/doctest.h>

#include <set>

#include "probe/installed.hpp"
#include "wheel/record.hpp"
#include "test_support.hpp"
#include "util/fs.hpp"

using namespace envfix;
using namespace envfix::probe;
using envfix::test::TempDir;

namespace fs = std::filesystem;

namespace {
std::size_t nonempty_lines(const std::string& s) {
  std::size_t n = 0, i = 0;
  while (i < s.size()) {
    auto nl = s.find('\n', i);
    if (nl == std::string::npos) nl = s.size();
    if (nl > i) ++n;
    i = nl + 1;
  }
  return n;
}
} // namespace

TEST_SUITE("unit/probe/installed") {

  // An installed RECORD is read by the one RECORD reader (wheel/record.hpp), as uninstall reads it.
  TEST_CASE("RECORD files of the real H200 dist-infos parse completely, as installed RECORDs") {
    auto installed = [](std::string_view text) { return wheel::Record::parse(text, "RECORD", wheel::RecordSource::installed); };
    for (auto& e : fs::directory_iterator(test::h200() / "dist-info")) {
      CAPTURE(e.path());
      auto text = util::read_file(e.path() / "RECORD").value();
      auto rows = installed(text).value().entries;
      CHECK(rows.size() == nonempty_lines(text));
      bool self = false;
      for (auto& r : rows) self = self || r.path.ends_with(".dist-info/RECORD");
      CHECK(self); // RECORD lists itself, without hash
    }
    auto torch = installed(util::read_file(test::h200() / "dist-info/torch-2.11.0.dist-info/RECORD").value()).value().entries;
    bool found = false;
    for (auto& r : torch)
      if (r.path == "torch/lib/libc10.so") {
        found = true;
        CHECK(r.hash_field() == "sha256=vl4XzXdSpq8AOXhwY3k4TDEI9raJFrsZSeYQ9jl7tkA");
        CHECK(r.size == 1498969u);
      }
    CHECK(found);
  }

  TEST_CASE("installed RECORD: trailing empty fields may be left out; quoting and errors as a wheel's") {
    auto installed = [](std::string_view text) { return wheel::Record::parse(text, "RECORD", wheel::RecordSource::installed); };
    auto rows = installed("\"a,b.py\",sha256=x,3\r\n\"q\"\"uote.py\",,\nplain.pyc\nhalf.py,sha256=y\n").value().entries;
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].path == "a,b.py");
    CHECK(rows[0].size == 3u);
    CHECK(rows[1].path == "q\"uote.py");
    CHECK(!rows[1].size);
    CHECK(rows[2].hash_field().empty());
    CHECK(rows[3].hash_field() == "sha256=y");
    // A wheel's RECORD has every field.
    CHECK(!wheel::Record::parse("plain.pyc\n", "RECORD"));
    auto bad = installed("ok.py,,\n\"open.py,,\n");
    REQUIRE(!bad);
    CHECK(bad.error().message.find("RECORD:2") != std::string::npos);
    CHECK(installed("x.py,sha256=a,12z\n").error().message.find("bad size") != std::string::npos);
    CHECK(!installed("x,y,z,w\n"));
    CHECK(!installed(",sha256=a,1\n"));
    CHECK(!installed("x.py,not a hash,1\n"));
  }

  TEST_CASE("dist-info folder names") {
    auto t = parse_dist_info_dirname("torch-2.7.0+cu128.dist-info").value();
    CHECK(t.name == "torch");
    CHECK(t.version == "2.7.0+cu128");
    auto c = parse_dist_info_dirname("nvidia_cudnn_cu13-9.19.0.56.dist-info").value();
    CHECK(c.name == "nvidia_cudnn_cu13");
    CHECK(c.version == "9.19.0.56");
    CHECK(!parse_dist_info_dirname("torch.dist-info"));
    CHECK(!parse_dist_info_dirname("torch-2.7.0.egg-info"));
    CHECK(!parse_dist_info_dirname("-1.0.dist-info"));
  }

  TEST_CASE("read the real dist-info folders captured on the H200 machine") {
    auto dists = scan_site_directory(test::h200() / "dist-info");
    REQUIRE(dists.size() == 5);
    // Sorted by normalized name.
    CHECK(dists[0].normalized_name() == "nvidia-cudnn-cu13");
    CHECK(dists[1].name == "torch");
    CHECK(dists[4].name == "triton");
    const auto& torch = dists[1];
    CHECK(torch.version.to_string() == "2.11.0");
    CHECK(torch.local().empty()); // PyPI's torch 2.11.0 carries no +cu130 label
    CHECK(torch.installer == "uv");
    CHECK(torch.requested);
    CHECK(torch.has_record);
    CHECK(!torch.direct_url);
    bool triton = false;
    for (auto& r : torch.requires_dist) triton = triton || (r.name == "triton" && r.specifier.to_string() == "==3.6.0");
    CHECK(triton);
    CHECK(torch.requires_dist.size() >= 15);
    CHECK(dists[2].name == "torchaudio");
    CHECK(dists[2].installer == "pip");
    CHECK(dists[3].version.to_string() == "0.26.0");
    CHECK(find_duplicates(dists).empty());
  }

  TEST_CASE("conda build strings name the variant") {
    CHECK(conda_build_variant("cuda129_mkl_py312_h1234567_300") == "cu129");
    CHECK(conda_build_variant("py3.11_cuda12.4_cudnn9.1.0_0") == "cu124");
    CHECK(conda_build_variant("cpu_mkl_py312_h0_100") == "cpu");
    CHECK(conda_build_variant("py3.12_cpu_0") == "cpu");
    CHECK(!conda_build_variant("py_0"));
  }

} // TEST_SUITE unit

TEST_SUITE("integration/probe/installed") {

  TEST_CASE("hand-made site-packages: duplicates, missing RECORD, broken METADATA, shared objects") {
    TempDir tmp;
    auto site = tmp.path() / "site-packages";
    auto di = site / "torch-2.6.0+cpu.dist-info";
    test::write(di / "METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0+cpu\n"
                                 "Requires-Dist: filelock\nRequires-Dist: this is (not valid\n\nbody\n");
    test::write(di / "INSTALLER", "pip\n");
    test::write(
        di / "direct_url.json",
        R"({"url": "https://download.pytorch.org/whl/cpu/torch-2.6.0%2Bcpu-cp311-cp311-linux_x86_64.whl", "archive_info": {}})");
    test::write(site / "torch/lib/libtorch_cpu.so", "not really elf");
    test::write(site / "torch/lib/libgomp.so.1", "x");
    test::write(site / "torch/__init__.py", "");
    test::write(di / "RECORD", "torch/__init__.py,,\ntorch/lib/libtorch_cpu.so,,\ntorch/lib/libgomp.so.1,,\n"
                               "torch/lib/gone.so,,\ntorch-2.6.0+cpu.dist-info/RECORD,,\n");
    // A second torch (an interrupted upgrade) with no RECORD and a METADATA-less folder.
    test::write(site / "torch-2.5.1.dist-info/INSTALLER", "pip\n");
    test::write(site / "Torch_Vision-0.21.0+cu124.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.21.0+cu124\nRequires-Dist: torch==2.6.0\n");
    std::vector<util::Message> notes;
    auto dists = scan_site_directory(site, &notes);
    REQUIRE(dists.size() == 3);
    CHECK(dists[0].name == "torch");
    CHECK(dists[0].version.to_string() == "2.5.1");
    CHECK(!dists[0].has_record);
    CHECK(dists[1].version.local() == "cpu");
    CHECK(dists[1].requires_dist.size() == 1); // the invalid line is skipped with a note
    CHECK(direct_url_of(dists[1]).starts_with("https://download.pytorch.org/whl/cpu/"));
    CHECK(dists[2].name == "torchvision");
    CHECK(dists[2].local() == "cu124");
    bool skipped_note = false, folder_note = false;
    for (auto& n : notes) {
      skipped_note = skipped_note || n.text.find("this is (not valid") != std::string::npos;
      folder_note = folder_note || n.text.find("torch-2.5.1.dist-info") != std::string::npos;
    }
    CHECK(skipped_note);
    CHECK(folder_note);
    auto dups = find_duplicates(dists);
    REQUIRE(dups.size() == 1);
    CHECK(dups[0].size() == 2);
    auto sos = installed_shared_objects(dists[1]).value();
    REQUIRE(sos.size() == 2); // gone.so is listed but absent
    CHECK(sos[0].path.filename() == "libgomp.so.1");
    CHECK(sos[1].path.filename() == "libtorch_cpu.so");
    CHECK(installed_shared_objects(dists[0]).value().empty()); // no RECORD
    // A folder with neither METADATA nor a version in its name is reported, not fatal.
    test::write(site / "weird.dist-info/INSTALLER", "pip\n");
    notes.clear();
    CHECK(scan_site_directory(site, &notes).size() == 3);
    CHECK(!notes.empty());
  }

  TEST_CASE("conda-meta records own dist-infos and list kernels in $PREFIX/lib") {
    TempDir tmp;
    auto prefix = tmp.path();
    auto site = prefix / "lib/python3.11/site-packages";
    test::write(site / "torch-2.9.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n");
    test::write(site / "numpy-2.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: numpy\nVersion: 2.0.0\n");
    test::write(site / "numpy-2.0.0.dist-info/INSTALLER", "conda\n");
    test::write(site / "six-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: six\nVersion: 1.0\n");
    test::write(site / "six-1.0.dist-info/INSTALLER", "pip\n");
    test::write(prefix / "lib/libtorch_cuda.so", "x");
    test::write(prefix / "conda-meta/pytorch-2.9.0-cuda129_h0_300.json",
                R"({"name": "pytorch", "version": "2.9.0", "build": "cuda129_h0_300", "channel": "conda-forge",
                  "files": ["lib/python3.11/site-packages/torch-2.9.0.dist-info/METADATA", "lib/libtorch_cuda.so", "bin/x"]})");
    test::write(prefix / "conda-meta/broken.json", "{nope");
    // Issue 60, point 4: odd entries (absolute, ../) are skipped; the record still owns numpy's
    // dist-info, so apply refuses to replace it without --allow-conda-overwrite.
    test::write(prefix / "conda-meta/numpy-2.0.0-py311_0.json",
                R"({"name": "numpy", "version": "2.0.0", "build": "py311_0",
                  "files": ["/etc/passwd", "../outside", "lib/python3.11/site-packages/numpy-2.0.0.dist-info/METADATA"]})");
    auto dists = scan_site_directory(site);
    std::vector<util::Message> notes;
    read_conda_meta(prefix, dists, &notes);
    REQUIRE(dists.size() == 3);
    REQUIRE(dists[0].conda);
    CHECK(dists[0].conda->name == "numpy");
    CHECK(dists[0].conda->build == "py311_0"); // the record's, not INSTALLER's bare "conda"
    CHECK(dists[1].name == "six");
    CHECK(!dists[1].conda);
    REQUIRE(dists[2].conda);
    CHECK(dists[2].conda->name == "pytorch");
    CHECK(dists[2].conda->build == "cuda129_h0_300");
    REQUIRE(dists[2].conda->prefix_objects.size() == 1);
    auto objs = installed_shared_objects(dists[2]);
    REQUIRE(objs);
    REQUIRE(objs->size() == 1);
    CHECK(objs->front().path.filename() == "libtorch_cuda.so");
    REQUIRE(notes.size() == 2); // the broken record is named, and the skipped entries
    const std::string said = notes[0].text + "\n" + notes[1].text;
    CHECK(said.find("numpy-2.0.0-py311_0.json: 2 'files' entries outside the prefix ignored") != std::string::npos);
  }

  TEST_CASE("conda-forge layout: pytorch's kernels are in libtorch's record; other dependencies' objects are not torch's") {
    TempDir tmp;
    auto prefix = tmp.path();
    auto site = prefix / "lib/python3.12/site-packages";
    const std::string rel = "lib/python3.12/site-packages/";
    test::write(site / "torch-2.9.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n");
    test::write(site / "torch-2.9.0.dist-info/INSTALLER", "conda\n");
    test::write(site / "torchvision-0.24.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.24.0\n");
    test::write(site / "torchvision-0.24.0.dist-info/INSTALLER", "pip\n"); // pip's, beside conda's torch
    for (const char* so : {"libtorch_cuda.so", "libtorch_cpu.so", "libcublas.so.12", "libc10.so"})
      test::write(prefix / "lib" / so, "x");
    test::write(
        prefix / "conda-meta/pytorch-2.9.0-cuda129_mkl_py312_h0_300.json",
        R"({"name": "pytorch", "version": "2.9.0", "build": "cuda129_mkl_py312_h0_300", "channel": "https://conda.anaconda.org/conda-forge",
                  "depends": ["libtorch 2.9.0 cuda129_mkl_h0_300", "libcublas >=12.9", "python >=3.12,<3.13.0a0"],
                  "files": [")" +
            rel + R"(torch-2.9.0.dist-info/METADATA", ")" + rel + R"(torch/__init__.py"]})");
    test::write(prefix / "conda-meta/libtorch-2.9.0-cuda129_mkl_h0_300.json",
                R"({"name": "libtorch", "version": "2.9.0", "build": "cuda129_mkl_h0_300", "depends": [],
                  "files": ["lib/libtorch_cuda.so", "lib/libtorch_cpu.so", "lib/libc10.so", "include/torch/x.h"]})");
    test::write(prefix / "conda-meta/libcublas-12.9.1.4-h0_0.json",
                R"({"name": "libcublas", "version": "12.9.1.4", "build": "h0_0", "files": ["lib/libcublas.so.12"]})");
    auto dists = scan_site_directory(site);
    read_conda_meta(prefix, dists);
    REQUIRE(dists.size() == 2);
    REQUIRE(dists[0].conda);
    CHECK(dists[0].conda->name == "pytorch");
    CHECK(conda_build_variant(dists[0].conda->build) == "cu129");
    auto objs = installed_shared_objects(dists[0]);
    REQUIRE(objs);
    std::set<std::string> names;
    for (const auto& o : *objs) names.insert(o.path.filename().string());
    CHECK(names == std::set<std::string>{"libc10.so", "libtorch_cpu.so", "libtorch_cuda.so"}); // not libcublas
    CHECK(dists[1].name == "torchvision");
    CHECK(!dists[1].conda); // pip's
  }

} // TEST_SUITE integration
