#include "fusefs/fuse/options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "fusefs/model/key_file.h"

namespace tiledbfs::fusefs {
namespace {

using core::ErrorCode;

Result<CommandLine> Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

void ExpectUsageError(std::vector<std::string> args, const std::string& substring) {
  auto r = Parse(args);
  ASSERT_FALSE(r.ok()) << "accepted: " << ::testing::PrintToString(args);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find(substring), std::string::npos) << r.error().message();
}

// The s3_* options are ours (ApplyStorageOption), not libfuse's.
TEST(ParseCommandLine, S3Options) {
  auto cl = Parse({"-o", "s3_endpoint=http://127.0.0.1:9000,s3_region=eu-west-1,allow_other",
                   "-os3_anonymous,s3_parallel=8,s3_recheck=0.5,s3_addressing=path",
                   "s3://bucket/array", "/mnt"});
  ASSERT_TRUE(cl.ok()) << cl.error().message();
  EXPECT_EQ(cl->source, "s3://bucket/array");
  EXPECT_EQ(*cl->storage.s3.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(*cl->storage.s3.region, "eu-west-1");
  EXPECT_TRUE(cl->storage.s3.anonymous);
  EXPECT_EQ(*cl->storage.s3.parallel, 8u);
  EXPECT_EQ(*cl->storage.s3.recheck_seconds, 0.5);
  EXPECT_TRUE(*cl->storage.s3.path_style);
  EXPECT_EQ(cl->fuse_options, std::vector<std::string>{"allow_other"});
  ExpectUsageError({"-o", "s3_parallel=0", "s3://b/a", "/mnt"}, "s3_parallel=0");
  ExpectUsageError({"-o", "s3_secret_key=x", "s3://b/a", "/mnt"}, "unknown S3 option");
}

TEST(ApplyStorageOption, EveryS3Option) {
  core::StorageOptions storage;
  core::S3Options& o = storage.s3;
  EXPECT_FALSE(*ApplyStorageOption("allow_other", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_endpoint=http://h:1", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_region=eu-west-1", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_profile=p", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_addressing=virtual", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_anonymous", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_parallel=32", storage));
  EXPECT_TRUE(*ApplyStorageOption("s3_recheck=2.5", storage));
  EXPECT_EQ(*o.endpoint, "http://h:1");
  EXPECT_EQ(*o.region, "eu-west-1");
  EXPECT_EQ(*o.profile, "p");
  EXPECT_FALSE(*o.path_style);
  EXPECT_TRUE(o.anonymous);
  EXPECT_EQ(*o.parallel, 32u);
  EXPECT_EQ(*o.recheck_seconds, 2.5);
  for (const char* bad :
       {"s3_parallel=0", "s3_parallel=x", "s3_parallel=5000", "s3_recheck=-1", "s3_recheck=soon",
        "s3_addressing=dns", "s3_endpoint", "s3_anonymous=1", "s3_secret=x"}) {
    auto r = ApplyStorageOption(bad, storage);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

// -o timestamp=T takes exactly what a history/<T> lookup takes (the model's
// ParseInstant); these are the forms README promises.
TEST(ParseTimestamp, Milliseconds) {
  EXPECT_EQ(*ParseTimestamp("1700000002000"), 1700000002000);
  EXPECT_EQ(*ParseTimestamp("9223372036854775807"), INT64_MAX);
}

TEST(ParseTimestamp, IsoForms) {
  // 1700000000000 = 2023-11-14T22:13:20.000Z (corpus README).
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:20.000Z"), 1700000000000);
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:20Z"), 1700000000000);
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:20"), 1700000000000);
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:22.5"), 1700000002500);
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:22.05Z"), 1700000002050);
  EXPECT_EQ(*ParseTimestamp("2023-11-14T22:13:22.123"), 1700000002123);
  EXPECT_EQ(*ParseTimestamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseTimestamp("2000-02-29T00:00:00Z"), 951782400000);
  EXPECT_EQ(*ParseTimestamp("2024-12-31T23:59:59.999Z"), 1735689599999);
}

TEST(ParseTimestamp, Rejects) {
  for (const char* bad : {"", "abc", "-5", "1700000002000x", "2023-13-14T22:13:20",
                          "2023-11-14T24:00:00", "2023-11-14T22:60:00", "2023-11-14T22:13:20.",
                          "2023-11-14T22:13:20+01:00", "2023-11-14T22:13:20ZZ",
                          "2023-1a-14T22:13:20", "99999999999999999999", "1969-12-31T23:59:59Z"}) {
    auto r = ParseTimestamp(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(r.error().message().find("bad timestamp '" + std::string(bad) + "'"),
                std::string::npos);
    }
  }
  EXPECT_NE(ParseTimestamp("abc").error().message().find("ISO 8601 UTC"), std::string::npos);
  EXPECT_NE(ParseTimestamp("1969-12-31T23:59:59Z").error().message().find("before 1970"),
            std::string::npos);
}

TEST(ParseSize, Forms) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseSize("512K"), 512u << 10);
  EXPECT_EQ(*ParseSize("256M"), 256u << 20);
  EXPECT_EQ(*ParseSize("256m"), 256u << 20);
  EXPECT_EQ(*ParseSize("256MiB"), 256u << 20);
  EXPECT_EQ(*ParseSize("256MB"), 256u << 20);
  EXPECT_EQ(*ParseSize("1G"), uint64_t{1} << 30);
  EXPECT_EQ(*ParseSize("2T"), uint64_t{2} << 40);
  EXPECT_EQ(*ParseSize("100B"), 100u);
  EXPECT_EQ(*ParseSize("16777215T"), uint64_t{16777215} << 40);
}

TEST(ParseSize, Rejects) {
  for (const char* bad : {"", "M", "-1", "1.5G", "1X", "1GG", "1 G", "1iB", "1Mx", "16777216T",
                          "18446744073709551616", "0x10"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(r.error().message().find("bad size"), std::string::npos);
    }
  }
  EXPECT_NE(ParseSize("16777216T").error().message().find("too large"), std::string::npos);
  EXPECT_NE(ParseSize("1X").error().message().find("unknown unit"), std::string::npos);
}

// Key files go through the model's reader (fusefs/model/key_file.h); these
// are the forms -o key_file=PATH promises.
const char kHex[] = "393e2175242c5e53266c792a735b276f22773f6b50617075706874284a4f4b2e";

TEST(KeyForms, HexWithAndWithoutNewline) {
  for (std::string text :
       {std::string(kHex), std::string(kHex) + "\n", std::string(kHex) + "\r\n"}) {
    auto k = ParseKey(text);
    ASSERT_TRUE(k.ok()) << k.error().ToString();
    EXPECT_EQ(k->bytes[0], 0x39);
    EXPECT_EQ(k->bytes[31], 0x2e);
  }
  std::string upper(kHex);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(ParseKey(upper)->bytes, ParseKey(kHex)->bytes);
}

TEST(KeyForms, Raw) {
  std::string raw(32, '\0');
  for (int i = 0; i < 32; ++i) raw[i] = static_cast<char>(i * 7 + 1);
  raw[31] = '\n';  // exactly 32 bytes: raw, even if the last is LF
  auto k = ParseKey(raw);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->bytes[0], 1);
  EXPECT_EQ(k->bytes[31], '\n');
}

TEST(KeyForms, RejectsWithoutQuotingTheKey) {
  std::string not_hex(kHex);
  not_hex[10] = 'g';
  for (const std::string& bad :
       {std::string(), std::string(31, 'a'), std::string(kHex).substr(0, 63),
        std::string(kHex) + "0", not_hex, std::string(200, 'x')}) {
    auto k = ParseKey(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.error().code(), ErrorCode::kKey);
    EXPECT_EQ(k.error().message().find("393e2175"), std::string::npos);
  }
  EXPECT_NE(ParseKey(not_hex).error().message().find("hex"), std::string::npos);
  EXPECT_NE(ParseKey(std::string(31, 'a')).error().message().find("31 bytes"), std::string::npos);
}

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tiledbfs_keyXXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& s) { std::ofstream(path_, std::ios::binary) << s; }
  std::string path_;
};

TEST_F(KeyFileTest, ReadsTheCorpusKey) {
  auto k = ReadKeyFile(std::string(TILEDBFS_TEST_DATA) + "/corpus/arrays/encrypted.key");
  ASSERT_TRUE(k.ok()) << k.error().ToString();
  EXPECT_EQ(k->bytes, ParseKey(kHex)->bytes);
}

TEST_F(KeyFileTest, Errors) {
  auto missing = ReadKeyFile("/nonexistent/key");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kKey);
  EXPECT_NE(missing.error().message().find("/nonexistent/key"), std::string::npos);
  EXPECT_NE(missing.error().message().find("No such file"), std::string::npos);

  Write(std::string(5000, 'a'));
  auto big = ReadKeyFile(path_);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("too large"), std::string::npos);

  Write("short\n");
  auto bad = ReadKeyFile(path_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kKey);
  EXPECT_NE(bad.error().message().find(path_), std::string::npos);
  EXPECT_EQ(bad.error().message().find("short"), std::string::npos);

  Write(std::string(kHex) + "\n");
  EXPECT_TRUE(ReadKeyFile(path_).ok());
  EXPECT_FALSE(ReadKeyFile("/tmp").ok());
}

TEST(SplitOptionList, CommasAndEscapes) {
  EXPECT_EQ(SplitOptionList("a,b=c,,d"), (std::vector<std::string>{"a", "b=c", "d"}));
  EXPECT_EQ(SplitOptionList("key_file=/x\\,y,ro"),
            (std::vector<std::string>{"key_file=/x,y", "ro"}));
  EXPECT_TRUE(SplitOptionList("").empty());
}

TEST(ParseCommandLine, Positional) {
  auto cl = Parse({"/data/arr", "/mnt/x"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->source, "/data/arr");
  EXPECT_EQ(cl->mountpoint, "/mnt/x");
  EXPECT_FALSE(cl->foreground);
  EXPECT_FALSE(cl->timestamp_ms);
  EXPECT_FALSE(cl->key_file);
  EXPECT_FALSE(cl->cache_bytes);
  EXPECT_TRUE(cl->fuse_options.empty());
}

TEST(ParseCommandLine, OwnAndFuseOptions) {
  auto cl = Parse({"-o", "timestamp=2023-11-14T22:13:22Z,allow_other,cache_size=1G", "arr", "-f",
                   "-okey_file=/k", "mnt", "-o", "ro,fsname=x\\,y", "-s"});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_EQ(*cl->timestamp_ms, 1700000002000);
  EXPECT_EQ(*cl->cache_bytes, uint64_t{1} << 30);
  EXPECT_EQ(*cl->key_file, "/k");
  EXPECT_TRUE(cl->foreground);
  EXPECT_TRUE(cl->single_thread);
  EXPECT_EQ(cl->fuse_options, (std::vector<std::string>{"allow_other", "fsname=x,y"}));
  EXPECT_EQ(cl->source, "arr");
  EXPECT_EQ(cl->mountpoint, "mnt");
}

TEST(ParseCommandLine, IndexOptions) {
  auto cl = Parse({"arr", "mnt"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->index, "auto");
  EXPECT_FALSE(cl->index_dir);
  EXPECT_FALSE(cl->index_bytes);
  cl = Parse({"-o", "index=off,index_dir=/tmp/i\\,x,index_size=64M", "arr", "mnt"});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_EQ(cl->index, "off");
  EXPECT_EQ(*cl->index_dir, "/tmp/i,x");
  EXPECT_EQ(*cl->index_bytes, uint64_t{64} << 20);
  EXPECT_TRUE(cl->fuse_options.empty());
  ExpectUsageError({"-o", "index=yes", "a", "b"}, "bad index 'yes'");
  ExpectUsageError({"-o", "index_size=big", "a", "b"}, "bad size 'big'");
  ExpectUsageError({"-o", "index_dir=", "a", "b"}, "needs a value");
}

TEST(ParseCommandLine, PageCacheIsOursWithoutAValue) {
  auto cl = Parse({"-o", "page_cache,allow_other", "arr", "mnt"});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_TRUE(cl->page_cache);
  EXPECT_EQ(cl->fuse_options, (std::vector<std::string>{"allow_other"}));
  cl = Parse({"arr", "mnt"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->page_cache);
  // With a value it is not ours: libfuse gets it (and rejects it).
  cl = Parse({"-o", "page_cache=1", "arr", "mnt"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->page_cache);
  EXPECT_EQ(cl->fuse_options, (std::vector<std::string>{"page_cache=1"}));
}

TEST(ParseCommandLine, StatsIsOursWithoutAValue) {
  auto cl = Parse({"-o", "stats", "arr", "mnt"});
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_TRUE(cl->stats);
  EXPECT_TRUE(cl->fuse_options.empty());
  cl = Parse({"arr", "mnt"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->stats);
}

TEST(ParseCommandLine, DebugImpliesForeground) {
  for (auto args : {std::vector<std::string>{"-d", "a", "m"},
                    std::vector<std::string>{"-o", "debug", "a", "m"}}) {
    auto cl = Parse(args);
    ASSERT_TRUE(cl.ok());
    EXPECT_TRUE(cl->debug);
    EXPECT_TRUE(cl->foreground);
    EXPECT_TRUE(cl->fuse_options.empty());
  }
}

TEST(ParseCommandLine, HelpAndVersionNeedNoArguments) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  EXPECT_TRUE(Parse({"-V"})->version);
}

TEST(ParseCommandLine, DoubleDashEndsOptions) {
  auto cl = Parse({"--", "-weird", "mnt"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->source, "-weird");
}

TEST(ParseCommandLine, UsageErrors) {
  ExpectUsageError({}, "missing ARRAY_OR_GROUP");
  ExpectUsageError({"arr"}, "missing MOUNTPOINT");
  ExpectUsageError({"a", "b", "c"}, "unexpected argument 'c'");
  ExpectUsageError({"-x", "a", "b"}, "unknown option -x");
  ExpectUsageError({"a", "b", "-o"}, "-o needs a value");
  ExpectUsageError({"-o", "timestamp=yesterday", "a", "b"}, "bad timestamp 'yesterday'");
  ExpectUsageError({"-o", "timestamp=", "a", "b"}, "needs a value");
  ExpectUsageError({"-o", "timestamp", "a", "b"}, "needs a value");
  ExpectUsageError({"-o", "cache_size=lots", "a", "b"}, "bad size 'lots'");
  ExpectUsageError({"-o", "key_file=", "a", "b"}, "needs a value");
  ExpectUsageError({"-o", "rw", "a", "b"}, "read-only");
}

}  // namespace
}  // namespace tiledbfs::fusefs
