#include "core/storage/s3/sigv4.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tiledbfs::core::s3 {
namespace {

struct Vector {
  std::string name;
  SigningRequest request;
  SigningKey key;
  std::string date;
  std::string authorization;
};

// tests/data/sigv4/vectors.txt (its README says where each came from).
std::vector<Vector> LoadVectors() {
  std::ifstream in(std::string(TILEDBFS_TEST_DATA) + "/sigv4/vectors.txt");
  std::vector<Vector> out;
  Vector v;
  std::string payload;
  auto flush = [&] {
    if (v.name.empty()) return;
    v.request.payload_sha256 = Sha256Hex(payload);
    out.push_back(v);
    v = Vector{};
    payload.clear();
  };
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) {
      flush();
      continue;
    }
    const size_t sp = line.find(' ');
    const std::string tag = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (tag == "name") {
      v.name = rest;
    } else if (tag == "key") {
      std::istringstream ss(rest);
      ss >> v.key.access_key_id >> v.key.secret_access_key >> v.key.region >> v.key.service;
    } else if (tag == "method") {
      v.request.method = rest;
    } else if (tag == "path") {
      v.request.canonical_uri = UriEncode(rest, true);
    } else if (tag == "query") {
      const size_t eq = rest.find('=');
      v.request.query.emplace_back(rest.substr(0, eq), rest.substr(eq + 1));
    } else if (tag == "header") {
      const size_t colon = rest.find(':');
      v.request.headers.emplace_back(rest.substr(0, colon), rest.substr(colon + 1));
      if (rest.substr(0, colon) == "x-amz-date") v.date = rest.substr(colon + 1);
    } else if (tag == "payload") {
      payload = rest;
    } else if (tag == "authorization") {
      v.authorization = rest;
    }
  }
  flush();
  return out;
}

TEST(SigV4Test, PublishedVectors) {
  const std::vector<Vector> vectors = LoadVectors();
  ASSERT_EQ(vectors.size(), 13u);
  for (const Vector& v : vectors) {
    EXPECT_EQ(Authorization(v.request, v.key, v.date), v.authorization) << v.name;
  }
}

TEST(SigV4Test, GetVanillaSteps) {
  const std::vector<Vector> vectors = LoadVectors();
  ASSERT_FALSE(vectors.empty());
  const Vector& v = vectors[0];
  ASSERT_EQ(v.name, "get-vanilla");
  EXPECT_EQ(CanonicalRequest(v.request),
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(StringToSign(v.request, v.key, v.date),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
}

TEST(SigV4Test, UriEncodeKeepsUnreservedAndEncodesTheRest) {
  EXPECT_EQ(UriEncode("a/b c+d~e", true), "a/b%20c%2Bd~e");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("\xe1\x88\xb4", true), "%E1%88%B4");
  EXPECT_EQ(CanonicalQuery({{"prefix", "a/b"}, {"delimiter", "/"}, {"list-type", "2"}}),
            "delimiter=%2F&list-type=2&prefix=a%2Fb");
}

TEST(SigV4Test, AmzDate) {
  EXPECT_EQ(AmzDate(1440938160), "20150830T123600Z");
  EXPECT_EQ(AmzDate(0), "19700101T000000Z");
}

TEST(SigV4Test, TheSecretIsNotInTheHeader) {
  SigningRequest r{
      "GET", "/", {}, {{"host", "h"}, {"x-amz-date", "20150830T123600Z"}}, Sha256Hex("")};
  const std::string auth =
      Authorization(r, {"AKID", "VERYSECRETVALUE", "us-east-1", "s3"}, "20150830T123600Z");
  EXPECT_EQ(auth.find("VERYSECRETVALUE"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::core::s3
