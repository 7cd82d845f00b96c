#include "fusefs/fuse/kernel_init.h"

#include <gtest/gtest.h>
#include <linux/fuse.h>

#include <cstddef>
#include <cstring>
#include <vector>

namespace tiledbfs::fusefs {
namespace {

template <class T>
void Put(std::vector<uint8_t>& b, size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

template <class T>
T Get(const std::vector<uint8_t>& b, size_t offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;
}

constexpr size_t kIn = sizeof(fuse_in_header);
constexpr size_t kOut = sizeof(fuse_out_header);

// A FUSE_INIT request as the kernel sends it: 7.`minor`, flags with
// flags2 above them.
std::vector<uint8_t> InitRequestBytes(uint64_t unique, uint64_t flags, uint32_t major = 7,
                                      uint32_t minor = 39) {
  std::vector<uint8_t> b(kIn + sizeof(fuse_init_in));
  Put<uint32_t>(b, offsetof(fuse_in_header, len), static_cast<uint32_t>(b.size()));
  Put<uint32_t>(b, offsetof(fuse_in_header, opcode), FUSE_INIT);
  Put<uint64_t>(b, offsetof(fuse_in_header, unique), unique);
  Put<uint32_t>(b, kIn + offsetof(fuse_init_in, major), major);
  Put<uint32_t>(b, kIn + offsetof(fuse_init_in, minor), minor);
  Put<uint32_t>(b, kIn + offsetof(fuse_init_in, flags), static_cast<uint32_t>(flags));
  Put<uint32_t>(b, kIn + offsetof(fuse_init_in, flags2), static_cast<uint32_t>(flags >> 32));
  return b;
}

// libfuse's INIT reply: header and fuse_init_out as two iovecs.
struct Reply {
  fuse_out_header head{};
  fuse_init_out body{};
  std::vector<iovec> iov() {
    head.len = sizeof(head) + sizeof(body);
    return {iovec{&head, sizeof(head)}, iovec{&body, sizeof(body)}};
  }
};

TEST(KernelInitTest, ParsesTheInitRequestAndItsUpperFlags) {
  const uint64_t flags = FUSE_ASYNC_READ | FUSE_INIT_EXT | kInitDirectIoAllowMmap;
  auto r = ParseInitRequest(InitRequestBytes(42, flags));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->unique, 42u);
  EXPECT_EQ(r->major, 7u);
  EXPECT_EQ(r->minor, 39u);
  EXPECT_EQ(r->flags, flags);
  // Without FUSE_INIT_EXT, flags2 is not a field of the request.
  auto old = InitRequestBytes(5, FUSE_ASYNC_READ);
  Put<uint32_t>(old, kIn + offsetof(fuse_init_in, flags2), 0xFFFFFFFFu);
  r = ParseInitRequest(old);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->flags, uint64_t{FUSE_ASYNC_READ});
}

TEST(KernelInitTest, OtherMessagesAndShortOnesAreNotInit) {
  auto b = InitRequestBytes(1, FUSE_INIT_EXT | kInitDirectIoAllowMmap);
  auto lookup = b;
  Put<uint32_t>(lookup, offsetof(fuse_in_header, opcode), FUSE_LOOKUP);
  EXPECT_FALSE(ParseInitRequest(lookup).has_value());
  EXPECT_FALSE(ParseInitRequest({}).has_value());
  // Cut before flags2, which FUSE_INIT_EXT says is there.
  const size_t cut = kIn + offsetof(fuse_init_in, flags2);
  auto short_msg = std::vector<uint8_t>(b.begin(), b.begin() + cut);
  Put<uint32_t>(short_msg, offsetof(fuse_in_header, len), static_cast<uint32_t>(cut));
  EXPECT_FALSE(ParseInitRequest(short_msg).has_value());
  // A length field past the bytes read.
  Put<uint32_t>(b, offsetof(fuse_in_header, len), static_cast<uint32_t>(b.size() + 1));
  EXPECT_FALSE(ParseInitRequest(b).has_value());
}

TEST(KernelInitTest, AddsFlagsToASuccessfulReplyOnly) {
  Reply r;
  r.body.flags = FUSE_ASYNC_READ;
  (void)r.iov();  // sets the length field
  std::vector<uint8_t> bytes(sizeof(r.head) + sizeof(r.body));
  std::memcpy(bytes.data(), &r.head, sizeof(r.head));
  std::memcpy(bytes.data() + kOut, &r.body, sizeof(r.body));
  ASSERT_TRUE(AddInitReplyFlags(bytes, kInitDirectIoAllowMmap));
  EXPECT_EQ(Get<uint32_t>(bytes, kOut + offsetof(fuse_init_out, flags)),
            uint32_t{FUSE_ASYNC_READ | FUSE_INIT_EXT});
  EXPECT_EQ(Get<uint32_t>(bytes, kOut + offsetof(fuse_init_out, flags2)),
            static_cast<uint32_t>(kInitDirectIoAllowMmap >> 32));
  // An error reply (EPROTO) is left as it is.
  auto error = bytes;
  Put<int32_t>(error, offsetof(fuse_out_header, error), -71);
  const auto before = error;
  EXPECT_FALSE(AddInitReplyFlags(error, kInitDirectIoAllowMmap));
  EXPECT_EQ(error, before);
  // A reply of a protocol before flags2 (7.22: 24 bytes of fuse_init_out).
  std::vector<uint8_t> old(kOut + 24);
  Put<uint32_t>(old, offsetof(fuse_out_header, len), static_cast<uint32_t>(old.size()));
  EXPECT_FALSE(AddInitReplyFlags(old, kInitDirectIoAllowMmap));
  // A length field that is not the message's.
  Put<uint32_t>(bytes, offsetof(fuse_out_header, len), 1);
  EXPECT_FALSE(AddInitReplyFlags(bytes, kInitDirectIoAllowMmap));
}

TEST(KernelInitTest, PatchesTheReplyToTheInitRequestWhenOffered) {
  KernelInit init(kInitDirectIoAllowMmap);
  std::vector<uint8_t> patched;
  Reply before;
  before.head.unique = 9;
  EXPECT_FALSE(init.Patch(before.iov(), &patched));  // no INIT read yet
  init.OnRead(InitRequestBytes(9, FUSE_ASYNC_READ | FUSE_INIT_EXT | kInitDirectIoAllowMmap));
  Reply other;
  other.head.unique = 10;  // a reply to something else
  EXPECT_FALSE(init.Patch(other.iov(), &patched));
  Reply r;
  r.head.unique = 9;
  r.body.major = 7;
  r.body.flags = FUSE_ASYNC_READ;
  const auto iov = r.iov();
  ASSERT_TRUE(init.Patch(iov, &patched));
  ASSERT_EQ(patched.size(), sizeof(r.head) + sizeof(r.body));
  EXPECT_EQ(Get<uint64_t>(patched, offsetof(fuse_out_header, unique)), 9u);
  EXPECT_EQ(Get<uint32_t>(patched, kOut + offsetof(fuse_init_out, major)), 7u);
  EXPECT_EQ(Get<uint32_t>(patched, kOut + offsetof(fuse_init_out, flags2)),
            static_cast<uint32_t>(kInitDirectIoAllowMmap >> 32));
  EXPECT_EQ(r.body.flags2, 0u);  // libfuse's own reply is not written to
  EXPECT_EQ(init.granted(), kInitDirectIoAllowMmap);
  // Once only: a later message with the same unique is not an INIT reply.
  EXPECT_FALSE(init.Patch(iov, &patched));
}

TEST(KernelInitTest, NothingAddedWhereTheKernelDoesNotOffer) {
  KernelInit init(kInitDirectIoAllowMmap);
  init.OnRead(InitRequestBytes(3, FUSE_ASYNC_READ | FUSE_INIT_EXT));  // a kernel before 6.6
  Reply r;
  r.head.unique = 3;
  std::vector<uint8_t> patched;
  EXPECT_FALSE(init.Patch(r.iov(), &patched));
  EXPECT_EQ(init.granted(), 0u);
}

TEST(KernelInitTest, AnInitOfAnotherMajorVersionWaitsForThe7xOne) {
  // libfuse answers a major above 7 with its own version; the kernel then
  // sends a 7.x INIT, whose reply is the one to patch.
  KernelInit init(kInitDirectIoAllowMmap);
  init.OnRead(InitRequestBytes(1, FUSE_INIT_EXT | kInitDirectIoAllowMmap, /*major=*/8));
  Reply first;
  first.head.unique = 1;
  std::vector<uint8_t> patched;
  EXPECT_FALSE(init.Patch(first.iov(), &patched));
  init.OnRead(InitRequestBytes(2, FUSE_INIT_EXT | kInitDirectIoAllowMmap));
  Reply second;
  second.head.unique = 2;
  EXPECT_TRUE(init.Patch(second.iov(), &patched));
  EXPECT_EQ(init.granted(), kInitDirectIoAllowMmap);
}

}  // namespace
}  // namespace tiledbfs::fusefs
