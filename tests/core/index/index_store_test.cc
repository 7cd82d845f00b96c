// IndexStore (issue 51) on real files in a temp folder: round trips, every
// kind of damaged entry rejected with one log line and removed, the modes,
// a folder that cannot be written (a file size limit, another user) or
// made, the least-recently-used bound, and writers in two processes and in
// two threads racing readers of the same key.
#include "core/index/index_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Sets a file's mtime (and atime) to `seconds` since the epoch, so that
// the least-recently-used order is known without sleeping.
void SetMtime(const std::string& path, time_t seconds) {
  timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

std::string Sha256(std::string_view b) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EXPECT_EQ(EVP_Digest(b.data(), b.size(), out, &len, EVP_sha256(), nullptr), 1);
  return std::string(reinterpret_cast<const char*>(out), len);
}

// The file with its last 32 bytes made the checksum of the rest again.
std::string Resum(std::string file) {
  file.resize(file.size() - 32);
  return file + Sha256(file);
}

template <class T>
void Poke(std::string& file, size_t offset, T v) {
  std::memcpy(file.data() + offset, &v, sizeof(T));
}

class IndexStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tiledbfs_index_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/index";
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(root_);
  }

  std::shared_ptr<IndexStore> Open(uint64_t max_bytes = uint64_t{1} << 30,
                                   uint64_t max_entry_bytes = uint64_t{256} << 20) {
    IndexOptions o;
    o.dir = dir_;
    o.max_bytes = max_bytes;
    o.max_entry_bytes = max_entry_bytes;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      logs_.push_back(line);
    };
    return IndexStore::Open(std::move(o));
  }

  std::vector<std::string> Logs() {
    std::lock_guard lock(mu_);
    return logs_;
  }
  void ClearLogs() {
    std::lock_guard lock(mu_);
    logs_.clear();
  }

  // Stores `payload` under `key`, damages its file with `damage`, and
  // expects the Get to miss with one log line naming the file and saying
  // `why`, the file removed, and the key usable again after.
  void ExpectRejected(const std::string& key, const std::string& payload,
                      const std::function<void(const std::string& path)>& damage,
                      const std::string& why) {
    SCOPED_TRACE(why);
    auto store = Open();
    store->Put(key, payload);
    const std::string path = store->PathOf(key);
    ASSERT_TRUE(Exists(path));
    damage(path);
    ClearLogs();
    const uint64_t rejected = store->stats().rejected;
    EXPECT_EQ(store->Get(key), std::nullopt);
    EXPECT_EQ(store->stats().rejected, rejected + 1);
    const auto logs = Logs();
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_NE(logs[0].find(path), std::string::npos) << logs[0];
    EXPECT_NE(logs[0].find(why), std::string::npos) << logs[0];
    EXPECT_NE(logs[0].find("removed"), std::string::npos) << logs[0];
    EXPECT_FALSE(Exists(path));
    store->Put(key, payload);
    EXPECT_EQ(store->Get(key), payload);
    EXPECT_EQ(Logs().size(), 1u);
  }

  // The byte offset of the payload in the entry file of `key`.
  static size_t PayloadOffset(const std::string& key) { return 24 + key.size(); }

  std::string root_, dir_;
  std::mutex mu_;
  std::vector<std::string> logs_;
};

TEST_F(IndexStoreTest, RoundTripReplaceAndMiss) {
  auto store = Open();
  ASSERT_TRUE(store->usable());
  EXPECT_EQ(store->Get("a"), std::nullopt);
  store->Put("a", "one");
  EXPECT_EQ(store->Get("a"), "one");
  store->Put("a", "two, longer");
  EXPECT_EQ(store->Get("a"), "two, longer");
  store->Put("empty", "");
  EXPECT_EQ(store->Get("empty"), "");
  const std::string binary("\0\1\2\xff", 4);
  store->Put(binary, binary);
  EXPECT_EQ(store->Get(binary), binary);
  EXPECT_EQ(store->Get("b"), std::nullopt);
  const IndexStats s = store->stats();
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.writes, 4u);
  EXPECT_EQ(s.write_failures, 0u);
  EXPECT_EQ(s.evicted, 0u);
  EXPECT_EQ(Names(dir_).size(), 3u);  // no temp file left
  EXPECT_TRUE(Logs().empty());

  // A later mount, another store on the same folder, reads it.
  store.reset();
  auto again = Open();
  EXPECT_EQ(again->Get("a"), "two, longer");
}

// An entry that checks but does not fit what it describes is dropped by
// its user: gone for the next mount, with one line saying why.
TEST_F(IndexStoreTest, DropRemovesTheEntryWithOneLogLine) {
  auto store = Open();
  store->Put("view", "layouts");
  const std::string path = store->PathOf("view");
  ASSERT_TRUE(Exists(path));
  store->Drop("view", "cells [0, +4) rendered to 12 bytes, layout says 8");
  EXPECT_FALSE(Exists(path));
  EXPECT_EQ(store->stats().dropped, 1u);
  auto logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find(path), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("layout says 8"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("removed"), std::string::npos) << logs[0];
  auto again = Open();
  EXPECT_EQ(again->Get("view"), std::nullopt);
  EXPECT_EQ(again->stats().rejected, 0u) << "missing, not rejected";
  // Another mount that dropped it first: nothing to remove, nothing counted.
  store->Drop("view", "again");
  EXPECT_EQ(store->stats().dropped, 1u);
  logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[1].find("already gone"), std::string::npos) << logs[1];
}

TEST_F(IndexStoreTest, FileIsNamedAndLaidOutAsDocumented) {
  auto store = Open();
  store->Put("abc", "payload");
  // SHA-256("abc") (FIPS 180-2's example).
  const std::string path = store->PathOf("abc");
  EXPECT_EQ(path, dir_ + "/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.tfi");
  const std::string file = ReadFile(path);
  ASSERT_EQ(file.size(), kIndexEntryOverhead + 3 + 7);
  EXPECT_EQ(file.substr(0, 8), std::string("TFSIDX\0\1", 8));
  uint32_t version = 0, key_size = 0;
  uint64_t payload_size = 0;
  std::memcpy(&version, file.data() + 8, 4);
  std::memcpy(&key_size, file.data() + 12, 4);
  std::memcpy(&payload_size, file.data() + 19, 8);
  EXPECT_EQ(version, kIndexFormat);
  EXPECT_EQ(key_size, 3u);
  EXPECT_EQ(file.substr(16, 3), "abc");
  EXPECT_EQ(payload_size, 7u);
  EXPECT_EQ(file.substr(27, 7), "payload");
  EXPECT_EQ(file.substr(34), Sha256(file.substr(0, 34)));
  auto encoded = EncodeIndexEntry("abc", "payload");
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(*encoded, file);
}

TEST_F(IndexStoreTest, ParseRejectsEveryPrefixAndOtherVersions) {
  auto encoded = EncodeIndexEntry("key", "some payload");
  ASSERT_TRUE(encoded.ok());
  const std::string file = *encoded;
  auto whole = ParseIndexEntry(AsBytes(file), "key");
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_EQ(AsStringView(*whole), "some payload");
  for (size_t n = 0; n < file.size(); ++n) {
    auto r = ParseIndexEntry(AsBytes(file).first(n), "key");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << n;
  }
  std::string v2 = file;
  Poke<uint32_t>(v2, 8, 2);
  auto r = ParseIndexEntry(AsBytes(Resum(v2)), "key");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  auto other = ParseIndexEntry(AsBytes(file), "kez");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message().find("another key"), std::string::npos);
}

TEST_F(IndexStoreTest, FlippedBytesAreRejected) {
  const std::string key = "array-identity", payload(300, 'p');
  auto flip_at = [](std::function<size_t(size_t)> where) {
    return [where](const std::string& path) {
      std::string f = ReadFile(path);
      f[where(f.size())] ^= 0x20;
      WriteFile(path, f);
    };
  };
  ExpectRejected(key, payload, flip_at([&](size_t) { return PayloadOffset(key) + 150; }),
                 "checksum mismatch");
  ExpectRejected(key, payload, flip_at([](size_t) { return 17; }), "checksum mismatch");
  ExpectRejected(key, payload, flip_at([](size_t n) { return n - 1; }), "checksum mismatch");
  ExpectRejected(key, payload, flip_at([](size_t) { return 2; }), "magic");
  // Bytes after the checksum.
  ExpectRejected(
      key, payload, [](const std::string& path) { WriteFile(path, ReadFile(path) + "x"); },
      "after the checksum");
}

TEST_F(IndexStoreTest, TruncatedEntriesAreRejected) {
  const std::string key = "k", payload(100, 'q');
  const size_t size = kIndexEntryOverhead + key.size() + payload.size();
  for (size_t n : {size_t{0}, size_t{5}, size_t{14}, size_t{20}, PayloadOffset(key) + 50, size - 32,
                   size - 1}) {
    SCOPED_TRACE(n);
    ExpectRejected(
        key, payload,
        [n](const std::string& path) { WriteFile(path, ReadFile(path).substr(0, n)); },
        "truncated");
  }
}

TEST_F(IndexStoreTest, AnotherFormatVersionIsRejected) {
  ExpectRejected(
      "k", "payload",
      [](const std::string& path) {
        std::string f = ReadFile(path);
        Poke<uint32_t>(f, 8, kIndexFormat + 1);
        WriteFile(path, Resum(f));  // a whole entry, only of version 2
      },
      "format version 2");
}

TEST_F(IndexStoreTest, AnotherKeysEntryIsRejected) {
  auto store = Open();
  store->Put("key A", "payload of A");
  ExpectRejected(
      "key B", "payload of B",
      [&](const std::string& path) { WriteFile(path, ReadFile(store->PathOf("key A"))); },
      "another key");
  EXPECT_EQ(store->Get("key A"), "payload of A");
  // Same length, other bytes: still another key.
  store->Put("key C", "payload of C");
  ExpectRejected(
      "key D", "payload of D",
      [&](const std::string& path) { WriteFile(path, ReadFile(store->PathOf("key C"))); },
      "another key");
}

TEST_F(IndexStoreTest, AbsurdLengthsAllocateNothing) {
  const std::string key = "k";
  // A payload length of 2^62 in a small file.
  ExpectRejected(
      key, "small",
      [&](const std::string& path) {
        std::string f = ReadFile(path);
        Poke<uint64_t>(f, 16 + key.size(), uint64_t{1} << 62);
        WriteFile(path, Resum(f));
      },
      "payload: need 4611686018427387904 bytes");
  // A key length of 2^32 - 1.
  ExpectRejected(
      key, "small",
      [](const std::string& path) {
        std::string f = ReadFile(path);
        Poke<uint32_t>(f, 12, UINT32_MAX);
        WriteFile(path, f);
      },
      "key: need 4294967295 bytes");
}

TEST_F(IndexStoreTest, FilesPastMaxEntryBytesAreRejectedUnread) {
  const std::string payload(1000, 'x');
  Open()->Put("k", payload);
  auto small = Open(uint64_t{1} << 30, 100);
  const std::string path = small->PathOf("k");
  EXPECT_EQ(small->Get("k"), std::nullopt);
  auto logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find(path), std::string::npos);
  EXPECT_NE(logs[0].find("max_entry_bytes"), std::string::npos) << logs[0];
  EXPECT_FALSE(Exists(path));
  // Nor is such a payload stored: logged once, counted each time.
  small->Put("k", payload);
  small->Put("k2", payload);
  EXPECT_FALSE(Exists(path));
  EXPECT_EQ(small->stats().write_failures, 2u);
  EXPECT_EQ(Logs().size(), 2u);
}

TEST_F(IndexStoreTest, FolderIs0700AndFiles0600WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0777}}) {
    SCOPED_TRACE(mask);
    dir_ = root_ + "/m" + std::to_string(mask) + "/parent/index";
    const mode_t old = ::umask(mask);
    auto store = Open();
    store->Put("k", "v");
    ::umask(old);
    ASSERT_TRUE(store->usable());
    for (const std::string& d : {dir_, root_ + "/m" + std::to_string(mask) + "/parent",
                                 root_ + "/m" + std::to_string(mask)}) {
      struct stat st;
      ASSERT_EQ(::stat(d.c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
    }
    struct stat st;
    ASSERT_EQ(::stat(store->PathOf("k").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(store->Get("k"), "v");
  }
  // A folder that exists keeps its mode.
  dir_ = root_ + "/mine";
  ASSERT_EQ(::mkdir(dir_.c_str(), 0750), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0750), 0);
  ASSERT_TRUE(Open()->usable());
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST_F(IndexStoreTest, FolderThatCannotBeMadeGivesAStoreThatDoesNothing) {
  WriteFile(root_ + "/file", "a regular file");
  dir_ = root_ + "/file/index";
  auto store = Open();
  EXPECT_FALSE(store->usable());
  auto logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find(dir_), std::string::npos) << logs[0];
  store->Put("k", "v");
  EXPECT_EQ(store->Get("k"), std::nullopt);
  EXPECT_EQ(store->stats().misses, 1u);
  EXPECT_EQ(store->stats().writes, 0u);
  EXPECT_EQ(Logs().size(), 1u);

  dir_ = "";
  EXPECT_FALSE(Open()->usable());
  EXPECT_EQ(Logs().size(), 2u);
}

// Runs `child` in a forked process; returns what it reports (empty: all
// went as expected) or how it died.
std::string InChild(const std::function<std::string()>& child) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    const std::string report = child();
    (void)!::write(fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) report.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    report += " child died (status " + std::to_string(status) + ")";
  }
  return report;
}

TEST_F(IndexStoreTest, WritesThatFailCostOnlySpeed) {
  // A file size limit of 16 bytes: every write of an entry fails with
  // EFBIG, for root too (chmod would not stop root).
  Open()->Put("earlier", "earlier payload");
  Open()->Put("replaced", "older payload");
  ClearLogs();
  const std::string report = InChild([this]() -> std::string {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{16, 16};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
    auto store = Open();
    const std::string big(1000, 'b');
    for (const char* key : {"k1", "k2", "k3", "replaced"}) store->Put(key, big);
    std::string bad;
    const auto logs = Logs();
    if (logs.size() != 1) bad += " " + std::to_string(logs.size()) + " log lines;";
    if (!logs.empty() && logs[0].find("File too large") == std::string::npos) {
      bad += " log line: " + logs[0] + ";";
    }
    const IndexStats s = store->stats();
    if (s.write_failures != 4 || s.writes != 0) bad += " wrong stats;";
    for (const std::string& name : Names(dir_)) {
      if (name[0] == '.') bad += " temp file " + name + " left;";
    }
    if (store->Get("earlier") != "earlier payload") bad += " earlier entry lost;";
    if (store->Get("k1") != std::nullopt) bad += " k1 stored;";
    // The older entry of a key whose Put failed is not answered.
    if (store->Get("replaced") != std::nullopt) bad += " older entry answered;";
    return bad;
  });
  EXPECT_EQ(report, "");
}

TEST_F(IndexStoreTest, ReadOnlyFolderCostsOnlySpeed) {
  auto store = Open();
  store->Put("earlier", "earlier payload");
  // Readable by all, writable by none but root; root then drops to nobody
  // in the child, for whom the folder is read-only as for any other user.
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(store->PathOf("earlier").c_str(), 0644), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  ClearLogs();
  const std::string report = InChild([this]() -> std::string {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      return "cannot become nobody";
    }
    auto store = Open();
    if (!store->usable()) return "not usable";
    for (const char* key : {"k1", "k2", "k3"}) store->Put(key, "payload");
    std::string bad;
    const auto logs = Logs();
    if (logs.size() != 1) bad += " " + std::to_string(logs.size()) + " log lines;";
    if (store->stats().write_failures != 3) bad += " wrong stats;";
    if (store->Get("earlier") != "earlier payload") bad += " earlier entry lost;";
    if (store->Get("k1") != std::nullopt) bad += " k1 stored;";
    return bad;
  });
  EXPECT_EQ(report, "");
  EXPECT_EQ(Names(dir_).size(), 1u);
}

TEST_F(IndexStoreTest, LeastRecentlyUsedEntriesGoFirst) {
  // Entries of 56 + 2 + 100 bytes; room for three.
  const std::string payload(100, 'v');
  const uint64_t entry = kIndexEntryOverhead + 2 + payload.size();
  auto store = Open(3 * entry + 50);
  const time_t base = 1'000'000'000;  // 2001, long before any write here
  auto put = [&](const std::string& key, time_t mtime) {
    store->Put(key, payload);
    SetMtime(store->PathOf(key), mtime);
  };
  auto present = [&](const std::string& key) { return Exists(store->PathOf(key)); };
  auto total = [&] {
    uint64_t t = 0;
    for (const std::string& name : Names(dir_)) t += fs::file_size(dir_ + "/" + name);
    return t;
  };
  for (int i = 0; i < 5; ++i) put("k" + std::to_string(i), base + i);
  EXPECT_FALSE(present("k0"));
  EXPECT_FALSE(present("k1"));
  EXPECT_TRUE(present("k2") && present("k3") && present("k4"));
  EXPECT_LE(total(), 3 * entry + 50);
  EXPECT_EQ(store->stats().evicted, 2u);

  // A hit makes k2, the oldest, the newest: k3 goes instead.
  EXPECT_EQ(store->Get("k2"), payload);
  store->Put("k5", payload);
  EXPECT_TRUE(present("k2"));
  EXPECT_FALSE(present("k3"));
  EXPECT_TRUE(present("k4") && present("k5"));
  EXPECT_TRUE(Logs().empty());

  // An entry alone past the bound is not stored, and evicts nothing.
  store->Put("big", std::string(3 * entry, 'b'));
  EXPECT_FALSE(present("big"));
  EXPECT_TRUE(present("k2") && present("k4") && present("k5"));
  ASSERT_EQ(Logs().size(), 1u);
  EXPECT_NE(Logs()[0].find(store->PathOf("big")), std::string::npos);
  EXPECT_EQ(store->stats().write_failures, 1u);
}

TEST_F(IndexStoreTest, TheEntryJustWrittenIsNeverEvicted) {
  const std::string payload(100, 'v');
  const uint64_t entry = kIndexEntryOverhead + 2 + payload.size();
  auto store = Open(2 * entry);
  // Entries used "in the future": the new one is the least recent.
  const time_t future = ::time(nullptr) + 86400;
  store->Put("k0", payload);
  SetMtime(store->PathOf("k0"), future);
  store->Put("k1", payload);
  SetMtime(store->PathOf("k1"), future + 1);
  store->Put("k2", payload);
  EXPECT_FALSE(Exists(store->PathOf("k0")));
  EXPECT_TRUE(Exists(store->PathOf("k1")));
  EXPECT_TRUE(Exists(store->PathOf("k2")));
}

TEST_F(IndexStoreTest, OtherFilesAreNotEntries) {
  const std::string payload(100, 'v');
  const uint64_t entry = kIndexEntryOverhead + 2 + payload.size();
  auto store = Open(3 * entry);
  store->Put("k0", payload);
  const std::string name = fs::path(store->PathOf("k0")).filename().string();
  // A writer's temp file: one that died long ago, one writing now; and a
  // file of the user's. None counts towards the bound.
  const std::string stale = dir_ + "/." + name + ".tmp.AAAAAA";
  const std::string fresh = dir_ + "/." + name + ".tmp.BBBBBB";
  WriteFile(stale, std::string(10 * entry, 's'));
  SetMtime(stale, 1'000'000'000);
  WriteFile(fresh, std::string(10 * entry, 'f'));
  WriteFile(dir_ + "/README", std::string(10 * entry, 'r'));
  // A store's first Put scans the folder (later ones when the bound may be
  // near: not here).
  store = Open(3 * entry);
  store->Put("k1", payload);
  store->Put("k2", payload);
  EXPECT_EQ(store->stats().evicted, 0u);
  EXPECT_FALSE(Exists(stale));
  EXPECT_TRUE(Exists(fresh));
  EXPECT_TRUE(Exists(dir_ + "/README"));
  EXPECT_EQ(store->Get("k0"), payload);
}

// Payloads of two sizes, each a pattern a mix of the two would break.
std::string Payload(char c, size_t n) {
  std::string p(n, c);
  for (size_t i = 0; i < n; i += 97) p[i] = static_cast<char>(i / 97);
  return p;
}

TEST_F(IndexStoreTest, ProcessesRacingOnOneKeySeeWholeEntries) {
  const std::string a = Payload('a', 3000), b = Payload('b', 70000);
  auto store = Open();
  std::vector<pid_t> writers;
  for (const std::string* p : {&a, &b}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto mine = Open();
      for (int i = 0; i < 200; ++i) mine->Put("shared", *p);
      ::_exit(mine->stats().writes == 200 ? 0 : 1);
    }
    writers.push_back(pid);
  }
  uint64_t gets = 0, hits = 0;
  int running = 2;
  while (running > 0 || gets < 100) {
    auto got = store->Get("shared");
    ++gets;
    if (got) {
      ++hits;
      ASSERT_TRUE(*got == a || *got == b) << got->size();
    }
    for (pid_t& pid : writers) {
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pid = 0;
        --running;
      }
    }
  }
  EXPECT_EQ(store->stats().rejected, 0u);
  EXPECT_TRUE(Logs().empty());
  auto last = store->Get("shared");
  ASSERT_TRUE(last);
  EXPECT_TRUE(*last == a || *last == b);
  EXPECT_EQ(Names(dir_).size(), 1u);
}

TEST_F(IndexStoreTest, ThreadsRacingOnOneKeySeeWholeEntries) {
  const std::string a = Payload('a', 3000), b = Payload('b', 70000);
  auto store = Open();
  std::atomic<int> writing{2};
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (const std::string* p : {&a, &b}) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < 200; ++i) store->Put("shared", *p);
      --writing;
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      for (int n = 0; writing > 0 || n < 100; ++n) {
        auto got = store->Get("shared");
        if (got && *got != a && *got != b) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0u);
  const IndexStats s = store->stats();
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.writes, 400u);
  EXPECT_TRUE(Logs().empty());
  EXPECT_EQ(Names(dir_).size(), 1u);
}

}  // namespace
}  // namespace tiledbfs::core
