#include "core/storage/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <ctime>

namespace tiledbfs::core::s3 {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string Hex(const unsigned char* p, size_t n) {
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 15];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Header values: surrounding spaces trimmed, inner runs of spaces made one.
std::string TrimValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> SortedHeaders(const SigningRequest& r) {
  std::vector<std::pair<std::string, std::string>> h;
  for (const auto& [name, value] : r.headers) h.emplace_back(Lower(name), TrimValue(value));
  std::stable_sort(h.begin(), h.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return h;
}

std::string SignedHeaders(const std::vector<std::pair<std::string, std::string>>& sorted) {
  std::string out;
  for (const auto& [name, value] : sorted) {
    if (!out.empty() && out.substr(out.rfind(';') + 1) == name) continue;
    if (!out.empty()) out += ';';
    out += name;
  }
  return out;
}

std::string Scope(const SigningKey& k, std::string_view amz_date) {
  return std::string(amz_date.substr(0, 8)) + "/" + k.region + "/" + k.service + "/aws4_request";
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return Hex(md, sizeof md);
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += "0123456789ABCDEF"[c >> 4];
      out += "0123456789ABCDEF"[c & 15];
    }
  }
  return out;
}

std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : query) q.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(q.begin(), q.end());
  std::string out;
  for (const auto& [k, v] : q) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

std::string CanonicalRequest(const SigningRequest& r) {
  const auto headers = SortedHeaders(r);
  std::string canonical_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    // Repeated names: one line, values joined by commas in the order given.
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.back() = ',';
      canonical_headers += headers[i].second + "\n";
      continue;
    }
    canonical_headers += headers[i].first + ":" + headers[i].second + "\n";
  }
  return r.method + "\n" + r.canonical_uri + "\n" + CanonicalQuery(r.query) + "\n" +
         canonical_headers + "\n" + SignedHeaders(headers) + "\n" + r.payload_sha256;
}

std::string StringToSign(const SigningRequest& r, const SigningKey& k, std::string_view amz_date) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + Scope(k, amz_date) + "\n" +
         Sha256Hex(CanonicalRequest(r));
}

std::string Authorization(const SigningRequest& r, const SigningKey& k, std::string_view amz_date) {
  std::string key = Hmac("AWS4" + k.secret_access_key, amz_date.substr(0, 8));
  key = Hmac(key, k.region);
  key = Hmac(key, k.service);
  key = Hmac(key, "aws4_request");
  const std::string sig = Hmac(key, StringToSign(r, k, amz_date));
  return "AWS4-HMAC-SHA256 Credential=" + k.access_key_id + "/" + Scope(k, amz_date) +
         ", SignedHeaders=" + SignedHeaders(SortedHeaders(r)) +
         ", Signature=" + Hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

std::string AmzDate(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace tiledbfs::core::s3
