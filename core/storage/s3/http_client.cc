#include "core/storage/s3/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>

#include "core/util/stop.h"

namespace tiledbfs::core::s3 {
namespace {

std::once_flag g_curl_init;

struct Transfer {
  HttpResponse* response;
  uint64_t max_body;
  // Called once: at the response's status line, or at the end if none came.
  std::function<void()> connected;
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
    // The server took the connection off its accept queue: its turn ends.
    if (t->connected) std::exchange(t->connected, nullptr)();
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
  std::string value = line.substr(v);
  if (name == "content-length") {
    // The body comes in pieces of at most 16 KiB: room for all of it (up
    // to max_body) at once, rather than growing and copying it many times.
    uint64_t length = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec == std::errc() && end == value.data() + value.size()) {
      t->response->body.reserve(static_cast<size_t>(std::min(length, t->max_body)));
    }
  }
  t->response->headers[name] = std::move(value);
  return n;
}

constexpr long kReceiveBytes = 256L << 10;

// Non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
int OnProgress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return StopRequested() ? 1 : 0;
}

constexpr char kCancelled[] = "cancelled: the process is stopping";

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
  for (Handle& h : pool_) {
    // The easy handles were taken off their multi handles after each transfer.
    curl_multi_cleanup(static_cast<CURLM*>(h.multi));
    curl_easy_cleanup(static_cast<CURL*>(h.curl));
  }
  if (shared_->share != nullptr) curl_share_cleanup(shared_->share);
}

HttpClient::Handle HttpClient::TakeHandle() const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    // Answered handles first: they have connections to reuse.
    auto it =
        std::find_if(pool_.rbegin(), pool_.rend(), [](const Handle& h) { return h.answered; });
    if (it == pool_.rend() && !pool_.empty()) it = pool_.rbegin();
    if (it != pool_.rend()) {
      Handle h = *it;
      pool_.erase(std::next(it).base());
      return h;
    }
  }
  Handle h{curl_easy_init(), curl_multi_init(), false};
  if (h.curl == nullptr || h.multi == nullptr) {
    curl_multi_cleanup(static_cast<CURLM*>(h.multi));
    curl_easy_cleanup(static_cast<CURL*>(h.curl));
    return Handle{};
  }
  return h;
}

void HttpClient::GiveHandle(Handle handle) const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(handle);
}

uint64_t HttpClient::BeginConnect() const {
  std::unique_lock<std::mutex> lock(pool_mu_);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(turns_, [&](const Turn& t) { return now - t.start >= kConnectTurn; });
    if (turns_.size() < kMaxConnecting) break;
    connect_cv_.wait_until(lock, turns_.front().start + kConnectTurn);
  }
  turns_.push_back({++turn_ids_, std::chrono::steady_clock::now()});
  return turn_ids_;
}

void HttpClient::EndConnect(uint64_t turn) const {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    std::erase_if(turns_, [&](const Turn& t) { return t.id == turn; });
  }
  connect_cv_.notify_all();
}

HttpResponse HttpClient::Perform(const HttpRequest& request) const {
  HttpResponse response;
  if (StopRequested()) {
    response.transport_error = kCancelled;
    response.cancelled = true;
    return response;
  }
  Handle handle = TakeHandle();
  CURL* curl = static_cast<CURL*>(handle.curl);
  if (curl == nullptr) {
    response.transport_error = "cannot create a curl handle (out of memory)";
    return response;
  }
  curl_easy_reset(curl);
  Transfer transfer{&response, request.max_body, nullptr};
  if (!handle.answered) {
    const uint64_t turn = BeginConnect();
    transfer.connected = [this, turn] { EndConnect(turn); };
  }
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
  // Bodies of about a megabyte (tiles): 256 KiB per receive, not 16 KiB,
  // for 16 times fewer system calls and callbacks.
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, kReceiveBytes);
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
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  // curl_easy_perform's loop, polling at least every kStopPoll: a stop of
  // the process is then seen (here, or by OnProgress, which curl calls as
  // it runs the transfer) even while the server is silent.
  CURLM* multi = static_cast<CURLM*>(handle.multi);
  CURLcode code = CURLE_OK;
  std::string multi_error;
  bool cancelled = false;
  if (CURLMcode added = curl_multi_add_handle(multi, curl); added != CURLM_OK) {
    multi_error = curl_multi_strerror(added);
  } else {
    for (;;) {
      int running = 0;
      CURLMcode mc = curl_multi_perform(multi, &running);
      if (mc == CURLM_OK && running == 0) {
        int left = 0;
        CURLMsg* msg = curl_multi_info_read(multi, &left);
        code = msg != nullptr && msg->msg == CURLMSG_DONE ? msg->data.result : CURLE_OK;
        break;
      }
      if (mc == CURLM_OK && StopRequested()) {
        cancelled = true;
        break;
      }
      if (mc == CURLM_OK) {
        mc = curl_multi_poll(multi, nullptr, 0, static_cast<int>(kStopPoll.count()), nullptr);
      }
      if (mc != CURLM_OK) {
        multi_error = curl_multi_strerror(mc);
        break;
      }
    }
    // Mid-transfer (cancelled, a multi failure), its connection is closed.
    curl_multi_remove_handle(multi, curl);
  }
  if (cancelled || code == CURLE_ABORTED_BY_CALLBACK) {
    response.status = 0;
    response.transport_error = kCancelled;
    response.cancelled = true;
  } else if (!multi_error.empty()) {
    response.status = 0;
    response.transport_error = multi_error;
  } else if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && response.capped)) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  } else {
    response.status = 0;
    response.transport_error = error[0] != '\0' ? error : curl_easy_strerror(code);
    response.retryable = Retryable(code);
  }
  if (transfer.connected) transfer.connected();  // no response
  curl_slist_free_all(headers);
  handle.answered = handle.answered || response.status != 0;
  GiveHandle(handle);
  return response;
}

}  // namespace tiledbfs::core::s3
