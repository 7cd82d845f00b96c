// The XML bodies S3 answers with, parsed with expat from bytes (no I/O, so a
// test or a fuzzer feeds them directly).
//
// ListObjectsV2 (GET /bucket?list-type=2&prefix=P&delimiter=/):
//   <ListBucketResult>
//     <IsTruncated>true|false</IsTruncated>
//     <NextContinuationToken>T</NextContinuationToken>   when truncated
//     <Contents><Key>K</Key><Size>N</Size><ETag>E</ETag>...</Contents>
//                                                        one per object
//     <CommonPrefixes><Prefix>P/</Prefix></CommonPrefixes> one per "folder"
//   </ListBucketResult>
// Errors: <Error><Code>NoSuchBucket</Code><Message>...</Message></Error>
// Spec: https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core::s3 {

struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as the server quotes it; empty if it sent none
};

struct ListPage {
  std::vector<ListedObject> objects;
  std::vector<std::string> prefixes;  // CommonPrefixes, with their trailing '/'
  bool truncated = false;
  std::string next_token;  // NextContinuationToken; non-empty when truncated
};

// Bounds on what a listing page may make us hold (a page has at most 1000
// entries on S3; a lying server gets an error, not memory).
struct ListLimits {
  size_t max_entries = 100000;
  size_t max_text = 64 * 1024;  // one element's text: a key, a token
};

// Parses one ListObjectsV2 page. Errors: kCorrupt for malformed XML (with
// expat's reason and line), a DOCTYPE (refused: no entities), a root that is
// not ListBucketResult, a Contents without Key or with a Size that is not a
// decimal uint64, IsTruncated true without a token, more than
// limits.max_entries entries or an element text longer than limits.max_text.
Result<ListPage> ParseListObjectsV2(Bytes xml, const ListLimits& limits = {});

struct S3ErrorBody {
  std::string code;     // "NoSuchBucket", "SlowDown", "AccessDenied"
  std::string message;  // the server's text
};

// The Code and Message of an <Error> body; empty fields when the body is not
// one (HTML from a proxy, nothing at all): never fails.
S3ErrorBody ParseS3Error(Bytes xml);

}  // namespace tiledbfs::core::s3
