#include "core/storage/s3/list_xml.h"

#include <gtest/gtest.h>

namespace tiledbfs::core::s3 {
namespace {

Bytes B(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// What s3rver 3.7.1 answered for one folder (one object, one sub-folder),
// made a truncated page.
const std::string kPage =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\"><Name>bkt</Name>"
    "<Prefix>a/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
    "<IsTruncated>true</IsTruncated>"
    "<Contents><Key>a/h&amp;.txt</Key><LastModified>2026-11-28T14:01:42.000Z</LastModified>"
    "<ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag><Size>6</Size>"
    "<StorageClass>STANDARD</StorageClass></Contents>"
    "<CommonPrefixes><Prefix>a/__fragments/</Prefix></CommonPrefixes>"
    "<NextContinuationToken>tok/+=</NextContinuationToken>"
    "</ListBucketResult>";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(ListXmlTest, ParsesAPage) {
  auto p = ParseListObjectsV2(B(kPage));
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->objects.size(), 1u);
  EXPECT_EQ(p->objects[0].key, "a/h&.txt");
  EXPECT_EQ(p->objects[0].size, 6u);
  EXPECT_EQ(p->objects[0].etag, "\"b1946ac92492d2347c6235b4d2611184\"");
  ASSERT_EQ(p->prefixes.size(), 1u);
  EXPECT_EQ(p->prefixes[0], "a/__fragments/");
  EXPECT_TRUE(p->truncated);
  EXPECT_EQ(p->next_token, "tok/+=");
}

TEST(ListXmlTest, LastPageAndEmptyPage) {
  auto p =
      ParseListObjectsV2(B(Replace(Replace(kPage, "<IsTruncated>true", "<IsTruncated>false"),
                                   "<NextContinuationToken>tok/+=</NextContinuationToken>", "")));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->truncated);
  auto e = ParseListObjectsV2(
      B("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->objects.empty());
  EXPECT_TRUE(e->prefixes.empty());
}

TEST(ListXmlTest, EveryTruncationIsRejected) {
  for (size_t n = 0; n < kPage.size(); ++n) {
    auto p = ParseListObjectsV2(B(kPage.substr(0, n)));
    ASSERT_FALSE(p.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  }
}

void ExpectCorrupt(const std::string& xml, const std::string& says, const ListLimits& limits = {}) {
  auto p = ParseListObjectsV2(B(xml), limits);
  ASSERT_FALSE(p.ok()) << xml;
  EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(p.error().message().find(says), std::string::npos) << p.error().message();
}

TEST(ListXmlTest, BadFieldsAreNamed) {
  ExpectCorrupt(Replace(kPage, "<Size>6</Size>", "<Size>-6</Size>"), "Size '-6'");
  ExpectCorrupt(Replace(kPage, "<Size>6</Size>", "<Size>99999999999999999999999</Size>"),
                "is not a byte count");
  ExpectCorrupt(Replace(kPage, "<Size>6</Size>", ""), "without Key or Size");
  ExpectCorrupt(Replace(kPage, "<IsTruncated>true", "<IsTruncated>maybe"), "IsTruncated");
  ExpectCorrupt(Replace(kPage, "<NextContinuationToken>tok/+=</NextContinuationToken>", ""),
                "no NextContinuationToken");
  ExpectCorrupt("<Error><Code>NoSuchBucket</Code></Error>", "root element is <Error>");
  ExpectCorrupt("<ListBucketResult></ListBucketResult>", "no IsTruncated");
  ExpectCorrupt("not xml at all", "ListObjectsV2 response");
}

TEST(ListXmlTest, HostileInputIsRefusedCheaply) {
  // Entity expansion ("billion laughs"): no DOCTYPE is accepted at all.
  ExpectCorrupt(
      "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b "
      "\"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>&b;</Key><Size>1</Size></Contents></ListBucketResult>",
      "DOCTYPE");
  ListLimits small;
  small.max_entries = 1;
  ExpectCorrupt(kPage, "more than 1 entries", small);
  ListLimits text;
  text.max_text = 8;
  ExpectCorrupt(kPage, "longer than 8 bytes", text);
  std::string deep = "<ListBucketResult>";
  for (int i = 0; i < 100; ++i) deep += "<a>";
  ExpectCorrupt(deep, "nested too deep");
}

TEST(ListXmlTest, ErrorBodies) {
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
      "<Message>Please reduce your request rate.</Message></Error>";
  S3ErrorBody e = ParseS3Error(B(xml));
  EXPECT_EQ(e.code, "SlowDown");
  EXPECT_EQ(e.message, "Please reduce your request rate.");
  EXPECT_TRUE(ParseS3Error(B("<html>Bad gateway</html>")).code.empty());
  EXPECT_TRUE(ParseS3Error(B("")).code.empty());
  EXPECT_TRUE(ParseS3Error(B(xml.substr(0, xml.size() / 2))).code.empty());
}

}  // namespace
}  // namespace tiledbfs::core::s3
