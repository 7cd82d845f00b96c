"""A fault-injecting HTTP proxy for the S3 tests, on loopback only.

  proxy = FaultProxy(upstream_port)      # started; proxy.port
  proxy.set(latency_ms=10, every=3, faults=["503", "reset", "truncate"])
  ... requests to http://127.0.0.1:<proxy.port> ...
  proxy.counts()  # {"LIST": n, "GET": n, "HEAD": n, "other": n, "faults": n}

Every request is forwarded to the upstream server (s3rver) as it came,
after `latency_ms`. Faults are deterministic, not random: when `every` > 0,
each every-th request (1-based count of requests that reach the proxy)
gets the next fault of `faults`, in turn:
  "503"       an S3 503 SlowDown error body, nothing forwarded
  "500"       an S3 500 InternalError
  "reset"     the connection closed without an answer (RST)
  "truncate"  the upstream answer with its headers (Content-Length too) but
              only the first half of its body, then the connection closed
  "short206"  a ranged GET's 206 answered with a Content-Range and body one
              byte shorter than asked (the server lies coherently)
`every=1` makes every request fail. With `fault_match=S`, only requests
whose path contains S are counted for `every` and meet faults. Counting: requests by kind (LIST =
GET with list-type, GET, HEAD, other), the faults injected, the bytes of
the bodies sent, and "peak_gets": the most GETs (not LISTs) under way at
once, from their arrival to the end of their answer.

Proving parallel requests without timing: `gather=N, gather_match=S` holds
each request whose path contains S until N of them are under way at once
(then all go on, and gathering ends: counts()["gathered"] is True), or
until 10 s have passed (then gathering ends unmet). A client that sends
them one at a time never meets it.

Holding requests, to catch a client in the middle of one: with
`hold_match=S`, every request whose path contains S is held (not
forwarded) until a set() without that match releases it, or close() ends
it (the connection is then reset, nothing answered). held() is the number
held now, counts()["held"] how many were held in all: a test waits for
held() >= 1 rather than sleeping.

`rounds()`: the round trips, as the groups of requests whose spans (arrival
to answer) overlap, counted in arrival order.
"""
import http.client
import http.server
import socket
import socketserver
import struct
import threading
import time

S3_ERRORS = {
    "503": (503, "SlowDown", "Please reduce your request rate."),
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
}


class FaultProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.latency_ms = 0
        self.every = 0
        self.faults = []
        self.n = 0
        self.fault_match = ""
        self.next_fault = 0
        self.stats = {"LIST": 0, "GET": 0, "HEAD": 0, "other": 0, "faults": 0, "bytes": 0,
                      "peak_gets": 0, "gathered": False, "held": 0}
        self.requests = []  # (method, path, range) of each request
        self.spans = []  # (arrival, end) of each answered request, monotonic seconds
        self.gets_running = 0
        self.gather, self.gather_match, self.gather_waiting = 0, "", 0
        self.gather_cv = threading.Condition(self.lock)
        self.hold_match, self.holding, self.closing = "", 0, False
        self.hold_cv = threading.Condition(self.lock)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: else a body sent after its headers waits for the
            # client's delayed ACK (40 ms a request), time no fault asked for.
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_GET(self):
                proxy.handle(self)

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def set(self, latency_ms=0, every=0, faults=(), gather=0, gather_match="", fault_match="",
            hold_match=""):
        with self.lock:
            self.latency_ms, self.every, self.faults = latency_ms, every, list(faults)
            self.fault_match = fault_match
            self.next_fault = 0
            self.gather, self.gather_match = gather, gather_match
            self.gather_cv.notify_all()
            self.hold_match = hold_match
            self.hold_cv.notify_all()

    def held(self):
        """The requests held now (hold_match)."""
        with self.lock:
            return self.holding

    def reset_counts(self):
        with self.lock:
            for k in self.stats:
                self.stats[k] = 0
            self.stats["gathered"] = False
            self.requests = []
            self.spans = []

    def rounds(self):
        """The number of round trips: groups of overlapping request spans."""
        with self.lock:
            spans = sorted(self.spans)
        n, end = 0, None
        for a, b in spans:
            if end is None or a > end:
                n += 1
                end = b
            else:
                end = max(end, b)
        return n

    def counts(self):
        with self.lock:
            return dict(self.stats)

    def close(self):
        with self.lock:
            self.closing = True
            self.hold_cv.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------ handling

    def handle(self, h):
        arrival = time.monotonic()
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        kind = h.command if h.command in ("GET", "HEAD") else "other"
        if kind == "GET" and "list-type=" in h.path:
            kind = "LIST"
        with self.lock:
            if kind == "GET":
                self.gets_running += 1
                self.stats["peak_gets"] = max(self.stats["peak_gets"], self.gets_running)
            self.hold(h.path)
            released = self.hold_held(h.path)
        try:
            if not released:
                self.reset(h)
                return
            self.answer(h, body, kind)
        finally:
            with self.lock:
                if kind == "GET":
                    self.gets_running -= 1
                self.spans.append((arrival, time.monotonic()))

    def hold(self, path):
        """With self.lock held: waits while gathering (see the module's doc)."""
        if not self.gather or not self.gather_match or self.gather_match not in path:
            return
        self.gather_waiting += 1
        try:
            if self.gather_waiting >= self.gather:
                self.stats["gathered"] = True
                self.gather = 0
                self.gather_cv.notify_all()
                return
            self.gather_cv.wait_for(lambda: not self.gather, timeout=10)
            self.gather = 0  # met or not, gathering ends
            self.gather_cv.notify_all()
        finally:
            self.gather_waiting -= 1

    def hold_held(self, path):
        """With self.lock held: waits while `path` matches hold_match; False
        if the proxy closed meanwhile (the request is then not answered)."""
        def holds():
            return self.hold_match and self.hold_match in path and not self.closing

        if not holds():
            return not self.closing
        self.holding += 1
        self.stats["held"] += 1
        try:
            self.hold_cv.wait_for(lambda: not holds())
        finally:
            self.holding -= 1
        return not self.closing

    def answer(self, h, body, kind):
        with self.lock:
            matched = self.fault_match in h.path
            self.n += matched
            self.stats[kind] += 1
            self.requests.append((h.command, h.path, h.headers.get("Range")))
            fault = None
            if matched and self.every and self.faults and self.n % self.every == 0:
                fault = self.faults[self.next_fault % len(self.faults)]
                self.next_fault += 1
                self.stats["faults"] += 1
            latency = self.latency_ms
        if latency:
            time.sleep(latency / 1000)
        if fault in S3_ERRORS:
            status, code, message = S3_ERRORS[fault]
            self.reply(h, status, {"Content-Type": "application/xml"},
                       f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>"
                       f"<Message>{message}</Message></Error>".encode())
            return
        if fault == "reset":
            self.reset(h)
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("connection",)}
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            conn.request(h.command, h.path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            out = {k: v for k, v in r.getheaders()
                   if k.lower() not in ("connection", "keep-alive", "transfer-encoding",
                                        "content-length")}
            status = r.status
        finally:
            conn.close()
        if fault == "truncate" and len(data) > 1:
            h.send_response(status)
            for k, v in out.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            self.reset(h)
            return
        if fault == "short206" and status == 206 and len(data) > 1:
            first, rest = out["Content-Range"].split(" ")[1].split("-")
            last, total = rest.split("/")
            out["Content-Range"] = f"bytes {first}-{int(last) - 1}/{total}"
            data = data[:-1]
        self.reply(h, status, out, data)

    def reply(self, h, status, headers, data):
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            try:
                h.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up on this request (its timeout, its own exit)
            with self.lock:
                self.stats["bytes"] += len(data)

    @staticmethod
    def reset(h):
        h.close_connection = True
        try:
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()
        except OSError:
            pass
