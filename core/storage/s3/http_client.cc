#include "core/storage/s3/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>

namespace tiledbfs::core::s3 {
namespace {

std::once_flag g_curl_init;

struct Transfer {
  HttpResponse* response;
  uint64_t max_body;
};

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  ByteVec& body = t->response->body;
  const uint64_t room = t->max_body - std::min<uint64_t>(t->max_body, body.size());
  const size_t take = static_cast<size_t>(std::min<uint64_t>(room, n));
  body.insert(body.end(), reinterpret_cast<const uint8_t*>(data),
              reinterpret_cast<const uint8_t*>(data) + take);
  if (take < n) {
    t->response->capped = true;
    return 0;  // stops the transfer (CURLE_WRITE_ERROR)
  }
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  std::string line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  // A new status line (after a 100 Continue or a redirect) starts afresh.
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  for (char& c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  size_t v = colon + 1;
  while (v < line.size() && (line[v] == ' ' || line[v] == '\t')) ++v;
  t->response->headers[name] = line.substr(v);
  return n;
}

bool Retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

struct HttpClient::Shared {
  CURLSH* share = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;
};

namespace {

void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
  auto* locks = static_cast<std::array<std::mutex, CURL_LOCK_DATA_LAST>*>(user);
  (*locks)[static_cast<size_t>(data) % locks->size()].lock();
}

void Unlock(CURL*, curl_lock_data data, void* user) {
  auto* locks = static_cast<std::array<std::mutex, CURL_LOCK_DATA_LAST>*>(user);
  (*locks)[static_cast<size_t>(data) % locks->size()].unlock();
}

}  // namespace

HttpClient::HttpClient(Options options) : options_(options), shared_(new Shared()) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  shared_->share = curl_share_init();
  if (shared_->share != nullptr) {
    curl_share_setopt(shared_->share, CURLSHOPT_LOCKFUNC, Lock);
    curl_share_setopt(shared_->share, CURLSHOPT_UNLOCKFUNC, Unlock);
    curl_share_setopt(shared_->share, CURLSHOPT_USERDATA, &shared_->locks);
    curl_share_setopt(shared_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(shared_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    // Not CURL_LOCK_DATA_CONNECT: libcurl does not support sharing
    // connections between concurrent threads (it corrupted the heap under
    // load here); each pooled handle keeps its own kept-alive connections.
  }
}

HttpClient::~HttpClient() {
  for (void* h : pool_) curl_easy_cleanup(static_cast<CURL*>(h));
  if (shared_->share != nullptr) curl_share_cleanup(shared_->share);
}

void* HttpClient::TakeHandle() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      void* h = pool_.back();
      pool_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::GiveHandle(void* handle) const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(handle);
}

HttpResponse HttpClient::Perform(const HttpRequest& request) const {
  HttpResponse response;
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) {
    response.transport_error = "cannot create a curl handle (out of memory)";
    return response;
  }
  curl_easy_reset(curl);
  Transfer transfer{&response, request.max_body};
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  // No "Accept:" and no "Expect:": S3 wants neither.
  headers = curl_slist_append(headers, "Accept:");
  headers = curl_slist_append(headers, "Expect:");
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.stall_timeout_s));
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (shared_->share != nullptr) curl_easy_setopt(curl, CURLOPT_SHARE, shared_->share);
  const CURLcode code = curl_easy_perform(curl);
  if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && response.capped)) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  } else {
    response.status = 0;
    response.transport_error = error[0] != '\0' ? error : curl_easy_strerror(code);
    response.retryable = Retryable(code);
  }
  curl_slist_free_all(headers);
  GiveHandle(curl);
  return response;
}

}  // namespace tiledbfs::core::s3
